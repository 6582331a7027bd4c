package memcache

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"

	"github.com/jakiro-kv/jakiro/kv"
)

// The ascii protocol (memcached's protocol.txt): a command line, and for
// the storage commands a data block of the length it names plus "\r\n".

// maxSwallow: a storage command naming a value over the store's maximum
// but at most this long has its data skipped and gets SERVER_ERROR, as
// memcached does; a longer one, or a length that does not parse, closes
// the connection (its bytes cannot be skipped safely).
const maxSwallow = 8 << 20

// parseASCII reads one ascii request into c.reqs (and its commands).
func (c *conn) parseASCII() error {
	if verb, err := c.peekVerb(); err != nil {
		return err
	} else if verb != "" {
		if !c.authed {
			return c.fatalASCII("CLIENT_ERROR authentication required: use the binary protocol's SASL PLAIN")
		}
		return c.startGet(verb)
	}
	line, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return c.fatalASCII("CLIENT_ERROR line too long")
	}
	if err != nil {
		return err
	}
	c.tokenize(line)
	t := c.toks
	if len(t) == 0 {
		return c.localASCII("ERROR", false)
	}
	if !c.authed {
		return c.fatalASCII("CLIENT_ERROR authentication required: use the binary protocol's SASL PLAIN")
	}
	switch string(t[0]) {
	case "get", "gets":
		return c.asciiGet(t[1:], string(t[0]) == "gets", false)
	case "gat", "gats":
		return c.asciiGet(t[1:], string(t[0]) == "gats", true)
	case "set":
		return c.asciiStore(t, kv.StoreSet, false)
	case "add":
		return c.asciiStore(t, kv.StoreAdd, false)
	case "replace":
		return c.asciiStore(t, kv.StoreReplace, false)
	case "append":
		return c.asciiStore(t, kv.StoreAppend, false)
	case "prepend":
		return c.asciiStore(t, kv.StorePrepend, false)
	case "cas":
		return c.asciiStore(t, kv.StoreSet, true)
	case "delete":
		// delete <key> [0] [noreply], as memcached 1.6 checks it: an error
		// respects noreply too.
		if len(t) < 2 || len(t) > 4 {
			return c.localASCII("ERROR", false)
		}
		noreply := len(t) > 2 && string(t[len(t)-1]) == "noreply"
		valid := len(t) == 2 || len(t) == 3 && (string(t[2]) == "0" || noreply) ||
			len(t) == 4 && string(t[2]) == "0" && noreply
		if !valid {
			return c.localASCII("CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]", noreply)
		}
		if len(t[1]) > kv.MaxKeyLen {
			return c.localASCII("CLIENT_ERROR bad command line format", noreply)
		}
		return c.keyedASCII(kindDelete, OpDelete, t[1], noreply)
	case "incr", "decr":
		noreply, ok := tail(t, 3)
		if !ok || len(t[1]) > kv.MaxKeyLen {
			return c.localASCII("ERROR", false)
		}
		delta, ok := parseUint(t[2], 64)
		if !ok {
			return c.localASCII("CLIENT_ERROR invalid numeric delta argument", noreply)
		}
		if err := c.keyedASCII(kindIncr, OpIncr, t[1], noreply); err != nil {
			return err
		}
		m := c.pool[c.used-1]
		m.Delta, m.Decr = delta, string(t[0]) == "decr"
		return nil
	case "touch":
		noreply, ok := tail(t, 3)
		if !ok || len(t[1]) > kv.MaxKeyLen {
			return c.localASCII("ERROR", false)
		}
		exp, ok := parseInt(t[2])
		if !ok {
			return c.localASCII("CLIENT_ERROR invalid exptime argument", noreply)
		}
		if err := c.keyedASCII(kindTouch, OpTouch, t[1], noreply); err != nil {
			return err
		}
		m := c.pool[c.used-1]
		m.TTL, m.Expired = c.ttl(exp)
		c.touches++
		return nil
	case "flush_all":
		return c.asciiFlush(t)
	case "stats":
		return c.asciiStats(t)
	case "cache_memlimit", "slabs", "lru_crawler":
		return c.asciiAdmin(t)
	case "mg", "ms", "md", "ma", "me", "mn":
		return c.asciiMeta(t)
	case "version":
		return c.localASCII("VERSION "+Version, false) // arguments ignored, as memcached 1.6
	case "verbosity":
		// verbosity <level> [noreply], as memcached 1.6 (which keeps a
		// level; the door logs nothing per command, so there is none).
		if len(t) == 2 && string(t[1]) == "noreply" {
			return c.localASCII("OK", true)
		}
		noreply, ok := tail(t, 2)
		if !ok {
			return c.localASCII("ERROR", false)
		}
		if _, ok := parseUint(t[1], 32); !ok {
			return c.localASCII("CLIENT_ERROR bad command line format", noreply)
		}
		return c.localASCII("OK", noreply)
	case "quit":
		if len(t) != 1 {
			return c.localASCII("ERROR", false)
		}
		c.quit = true
		return nil
	}
	if len(t) > 1 && bytes.HasPrefix(t[len(t)-1], []byte("HTTP/")) {
		// An HTTP request (a browser, a probe, a cross-protocol attack):
		// closed without an answer, as memcached does.
		c.d.badInput.Add(1)
		c.quit = true
		return nil
	}
	return c.localASCII("ERROR", false)
}

// tail checks a command of n tokens, or n+1 with "noreply" last.
func tail(t [][]byte, n int) (noreply, ok bool) {
	switch {
	case len(t) == n:
		return false, true
	case len(t) == n+1 && string(t[n]) == "noreply":
		return true, true
	}
	return false, false
}

// tokenize splits line (with its "\r\n" or "\n") at spaces into c.toks,
// which alias line.
func (c *conn) tokenize(line []byte) {
	c.toks = c.toks[:0]
	line = trimEOL(line)
	for i := 0; ; {
		start, end := word(line, i)
		if start == end {
			return
		}
		c.toks = append(c.toks, line[start:end])
		i = end
	}
}

// trimEOL drops line's "\r\n" or "\n".
func trimEOL(line []byte) []byte {
	n := len(line) - 1
	if n > 0 && line[n-1] == '\r' {
		n--
	}
	return line[:n]
}

// word finds the space-separated word at or after line[i]: start == end
// when there is none.
func word(line []byte, i int) (start, end int) {
	for i < len(line) && line[i] == ' ' {
		i++
	}
	j := i
	for j < len(line) && line[j] != ' ' {
		j++
	}
	return i, j
}

func (c *conn) localASCII(msg string, noreply bool) error {
	c.reqs = append(c.reqs, request{kind: kindLocal, msg: msg, noreply: noreply})
	return nil
}

// fatalASCII answers msg and closes the connection after this round.
func (c *conn) fatalASCII(msg string) error {
	c.d.badInput.Add(1)
	c.localASCII(msg, false)
	return errClose
}

func (c *conn) keyedASCII(kind reqKind, op Op, key []byte, noreply bool) error {
	first := c.used
	m := c.cmd()
	m.Op = op
	c.keyed(m, key)
	c.reqs = append(c.reqs, request{kind: kind, first: first, n: 1, noreply: noreply})
	return nil
}

// asciiGet: get|gets <key>*, gat|gats <exptime> <key>*.
func (c *conn) asciiGet(t [][]byte, cas, touch bool) error {
	var ttl uint32
	var expired bool
	if touch {
		if len(t) == 0 {
			return c.localASCII("ERROR", false)
		}
		exp, ok := parseInt(t[0])
		if !ok {
			return c.localASCII("CLIENT_ERROR invalid exptime argument", false)
		}
		ttl, expired = c.ttl(exp)
		t = t[1:]
		c.touches++
	}
	if len(t) == 0 {
		return c.localASCII("ERROR", false)
	}
	for _, k := range t {
		if len(k) > kv.MaxKeyLen {
			return c.localASCII("CLIENT_ERROR bad command line format", false)
		}
	}
	first := c.used
	for _, k := range t {
		m := c.cmd()
		m.Op = OpGet
		if touch {
			m.Op, m.TTL, m.Expired = OpGat, ttl, expired
		}
		c.keyed(m, k)
	}
	c.gets += uint64(len(t))
	c.reqs = append(c.reqs, request{kind: kindGet, first: first, n: len(t), withCAS: cas})
	return nil
}

// Shapes of a storage command line (storeShape).
const (
	shapeOK          = iota // its data block follows: size bytes and "\r\n"
	shapeWrongTokens        // too few or too many tokens
	shapeBadLength          // <bytes> is not a length
)

// storeShape reads a storage command line's tokens as memcached does:
// <cmd> <key> <flags> <exptime> <bytes> [<cas>] [noreply] (any token in
// noreply's place is allowed; only "noreply" counts). Only shapeOK lines
// have a data block; the parser and the pump's requestLen both go by it.
func storeShape(t [][]byte) (size int64, noreply bool, shape int) {
	n := 5
	if string(t[0]) == "cas" {
		n = 6
	}
	if len(t) != n && len(t) != n+1 {
		return 0, false, shapeWrongTokens
	}
	noreply = len(t) == n+1 && string(t[n]) == "noreply"
	size, ok := parseInt(t[4])
	if !ok || size < 0 || size > math.MaxInt32-2 { // memcached's bounds
		return 0, noreply, shapeBadLength
	}
	return size, noreply, shapeOK
}

// asciiStore: <cmd> <key> <flags> <exptime> <bytes> [<cas>] [noreply], then
// the data block.
func (c *conn) asciiStore(t [][]byte, mode kv.StoreMode, cas bool) error {
	size, noreply, shape := storeShape(t)
	switch shape {
	case shapeWrongTokens: // memcached: no such command; its data is not read
		return c.localASCII("ERROR", false)
	case shapeBadLength: // answered, the connection goes on; nothing read
		return c.localASCII("CLIENT_ERROR bad command line format", noreply)
	}
	flags, okf := parseUint(t[2], 32)
	exp, oke := parseInt(t[3])
	var version uint64
	okc := true
	if cas {
		version, okc = parseUint(t[5], 64)
	}
	if size > int64(c.d.be.MaxValue()) || !okf || !oke || !okc || len(t[1]) > kv.MaxKeyLen {
		// The data's length is known: skip it and go on, as memcached.
		if size > maxSwallow {
			return c.fatalASCII("SERVER_ERROR object too large for cache")
		}
		if size > int64(c.d.be.MaxValue()) && mode == kv.StoreSet && !cas && len(t[1]) <= kv.MaxKeyLen {
			// A set that fails drops the key's old value, as memcached:
			// no reader gets a value older than the last write tried.
			c.tooLarge(t[1], request{noreply: noreply})
		} else if size > int64(c.d.be.MaxValue()) {
			c.localASCII("SERVER_ERROR object too large for cache", noreply)
		} else {
			c.localASCII("CLIENT_ERROR bad command line format", noreply)
		}
		_, err := c.r.Discard(int(size) + 2) // t is stale from here
		return err
	}
	first := c.used
	m := c.cmd()
	m.Op, m.Mode, m.Flags, m.CAS = OpStore, mode, uint32(flags), version
	if cas && version == 0 {
		m.CAS = ^uint64(0) // cas 0 names no version: never matches
	}
	m.TTL, m.Expired = c.ttl(exp)
	c.keyed(m, t[1])
	// t aliases the read buffer: nothing of it is used past this point.
	buf := m.body(int(size) + 2)
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return err
	}
	if buf[size] != '\r' || buf[size+1] != '\n' {
		c.used = first
		return c.fatalASCII("CLIENT_ERROR bad data chunk")
	}
	m.Value = buf[:size]
	c.sets++
	c.reqs = append(c.reqs, request{kind: kindStore, first: first, n: 1, noreply: noreply})
	return nil
}

// tooLarge answers a storage request whose value is over the maximum
// and deletes key (a set's: its old value must not outlive the write).
func (c *conn) tooLarge(key []byte, q request) {
	first := c.used
	m := c.cmd()
	m.Op = OpDelete
	c.keyed(m, key)
	q.kind, q.first, q.n = kindTooLarge, first, 1
	c.reqs = append(c.reqs, q)
}

// answerASCII writes a request's answer.
func (c *conn) answerASCII(q *request) {
	w := c.w
	line := func(s string) {
		if !q.noreply {
			w.WriteString(s)
			w.WriteString("\r\n")
		}
	}
	switch q.kind {
	case kindLocal:
		line(q.msg)
	case kindStore:
		m := c.pool[q.first]
		switch m.Status {
		case kv.StatusOK:
			line("STORED")
		case kv.StatusNotStored:
			line("NOT_STORED")
		case kv.StatusExists:
			line("EXISTS")
		case kv.StatusNotFound:
			line("NOT_FOUND")
		default:
			line(serverError(m.Status))
		}
	case kindDelete:
		switch m := c.pool[q.first]; m.Status {
		case kv.StatusOK:
			line("DELETED")
		case kv.StatusNotFound:
			line("NOT_FOUND")
		default:
			line(serverError(m.Status))
		}
	case kindIncr:
		switch m := c.pool[q.first]; m.Status {
		case kv.StatusOK:
			if !q.noreply {
				w.Write(strconv.AppendUint(c.scratch[:0], m.Num, 10))
				w.WriteString("\r\n")
			}
		case kv.StatusNotFound:
			line("NOT_FOUND")
		case kv.StatusNotNumeric:
			line("CLIENT_ERROR cannot increment or decrement non-numeric value")
		default:
			line(serverError(m.Status))
		}
	case kindTouch:
		switch m := c.pool[q.first]; m.Status {
		case kv.StatusOK:
			line("TOUCHED")
		case kv.StatusNotFound:
			line("NOT_FOUND")
		default:
			line(serverError(m.Status))
		}
	case kindFlush:
		line("OK")
	case kindTooLarge:
		line("SERVER_ERROR object too large for cache")
	case kindMeta:
		c.answerMeta(q)
	case kindDump:
		c.answerDump(c.pool[q.first])
	case kindReset:
		c.count() // the answers before it count, then nothing does
		c.d.resetCounters()
		line("RESET")
	case kindStats:
		var stats []Stat
		switch q.args {
		case statsGeneral:
			stats = c.d.stats(c.d.be.Stats())
		case statsSettings:
			stats = c.d.settings()
		}
		for _, s := range stats {
			w.WriteString("STAT ")
			w.WriteString(s.Name)
			w.WriteByte(' ')
			w.WriteString(s.Value)
			w.WriteString("\r\n")
		}
		w.WriteString("END\r\n")
	}
}

// valueASCII writes a get's VALUE line and data for m, if it was found.
func (c *conn) valueASCII(q *request, m *Cmd) {
	if m.Status != kv.StatusOK {
		c.misses++
		return
	}
	c.hits++
	w, num := c.w, c.scratch[:0]
	w.WriteString("VALUE ")
	w.Write(m.Key)
	w.WriteByte(' ')
	w.Write(strconv.AppendUint(num, uint64(m.Meta.Flags), 10))
	w.WriteByte(' ')
	w.Write(strconv.AppendUint(num, uint64(m.N), 10))
	if q.withCAS {
		w.WriteByte(' ')
		w.Write(strconv.AppendUint(num, m.Meta.Version, 10))
	}
	w.WriteString("\r\n")
	w.Write(m.Out[:m.N])
	w.WriteString("\r\n")
}

func serverError(st kv.Status) string {
	switch st {
	case kv.StatusTooLarge:
		return "SERVER_ERROR object too large for cache"
	case kv.StatusNoMemory:
		return "SERVER_ERROR out of memory storing object"
	case kv.StatusBadKey:
		return "CLIENT_ERROR bad command line format"
	}
	return "SERVER_ERROR " + st.String()
}

// parseUint parses a decimal of at most bits bits, without allocating.
func parseUint(b []byte, bits int) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		d := uint64(ch - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if bits < 64 && v >= 1<<bits {
		return 0, false
	}
	return v, true
}

// parseInt parses a signed decimal that fits 63 bits.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	v, ok := parseUint(b, 63)
	if neg {
		return -int64(v), ok
	}
	return int64(v), ok
}
