package memcache

import (
	"encoding/base64"
	"io"
	"strconv"

	"github.com/jakiro-kv/jakiro/kv"
)

// The meta commands (memcached 1.6's protocol.txt, "Meta Commands"):
//
//	mg <key> <flags>*                 get:    b c C f h k l N O q R s t v T u
//	ms <key> <datalen> <flags>*\r\n   set:    b c C F I k O q T M(E A P R S)
//	md <key> <flags>*                 delete: b C I k O q T
//	ma <key> <flags>*                 arith:  b c D J k M(I + D -) N O q v
//	me <key>                          debug:  exp, la, cas, fetch, size
//	mn                                MN: the answers before it are out
//
// h and l report the item's fetched bit and seconds since its last access
// as they were before the mg (kv.Meta; l needs the store's access times,
// kv.Config.AccessTimes, which `jakiro server --memcached` keeps: without
// them an mg asking for l is answered CLIENT_ERROR). u reads without
// marking the item (so does me). Every read marks it: get, gets, gat, mg,
// touch, the binary gets and an RFP client's Get alike, as memcached counts
// every fetch. I, N, R and the answers' X, W and Z are memcached's
// serve-stale and recache (stale.go); mg's C sends no value while the
// item's cas is C's. A flag the store cannot honour (C on ma, E, N on
// ms, x) is answered CLIENT_ERROR, as memcached answers a flag it does
// not know, rather than faked. Return flags come in the order asked, then
// Z, X and W; q hides HD (and mg's EN); errors always come. An ms whose
// line names a length has its data block read (or skipped, after an
// error), as memcached does.

// maxOpaque is the longest O token, as memcached.
const maxOpaque = 32

// metaSize is an ms line's data length, if it has one: only then is a
// data block read (the parser and the pump's requestLen go by it).
func metaSize(t [][]byte) (int64, bool) {
	if len(t) < 3 {
		return 0, false
	}
	size, ok := parseInt(t[2])
	return size, ok && size >= 0
}

// metaAllowed lists the flags each meta command takes.
func metaAllowed(verb byte) string {
	switch verb {
	case 'g':
		return "bcCfhklNOqRstvTu"
	case 's':
		return "bcCFIkOqTM"
	case 'd':
		return "bCIkOqT"
	case 'a':
		return "bcDJkMNOqv"
	case 'e':
		return "b"
	}
	return ""
}

// asciiMeta parses a meta command (t[0] is mg, ms, md, ma, me or mn).
func (c *conn) asciiMeta(t [][]byte) error {
	verb := t[0][1]
	if verb == 'n' {
		return c.localASCII("MN", false)
	}
	if len(t) < 2 {
		return c.localASCII("ERROR", false)
	}
	size, from := int64(-1), 2
	if verb == 's' {
		var ok bool
		if size, ok = metaSize(t); !ok {
			return c.localASCII("CLIENT_ERROR bad command line format", false)
		}
		from = 3
	}
	// An error past this point skips an ms's data block.
	fail := func(msg string) error {
		if size > maxSwallow {
			return c.fatalASCII(msg)
		}
		c.localASCII(msg, false)
		if size >= 0 {
			_, err := c.r.Discard(int(size) + 2)
			return err
		}
		return nil
	}
	invalid, duplicate := "CLIENT_ERROR invalid flag", "CLIENT_ERROR duplicate flag"
	if verb == 'd' || verb == 'a' {
		invalid = "CLIENT_ERROR invalid or duplicate flag"
		duplicate = invalid
	}
	badToken := "CLIENT_ERROR bad token in command line format" // memcached 1.6's words, by command
	switch verb {
	case 's':
		badToken = "CLIENT_ERROR bad command line format"
	case 'd', 'a':
		badToken = invalid
	}
	allowed := metaAllowed(verb)
	q := request{kind: kindMeta, meta: verb, specFrom: len(c.metaBuf)}
	var seen uint64
	var ttl, incrTTL int64
	var flags uint32
	var cas, delta, initial uint64 = 0, 1, 0
	var mode byte
	touch, create, peek, stale := false, false, false, false
	var recache int64
	hasRecache, cas0 := false, false
	for _, tok := range t[from:] {
		f := tok[0]
		if f < 'A' || f > 'z' || !containsByte(allowed, f) {
			return fail(invalid)
		}
		if bit := uint64(1) << (f - 'A'); seen&bit != 0 {
			return fail(duplicate)
		} else {
			seen |= bit
		}
		arg := tok[1:]
		ok := true
		switch f {
		case 'b', 'c', 'f', 'h', 'k', 'l', 'q', 's', 't', 'v', 'u', 'I':
			// memcached reads only a flag's letter: "vv" is v
			switch f {
			case 'I':
				stale = true
				continue
			case 'q':
				q.quiet = true
			case 'v':
				q.value = true
			case 'b':
				q.b64 = true
			case 'u':
				peek = true
			}
			if f != 'q' && f != 'v' && f != 'u' {
				c.metaBuf = append(c.metaBuf, f)
			}
		case 'O':
			if len(arg) > maxOpaque {
				return fail("CLIENT_ERROR opaque token too long")
			}
			c.metaBuf = append(c.metaBuf, 'O', byte(len(arg)))
			c.metaBuf = append(c.metaBuf, arg...)
		case 'T', 'N':
			var v int64
			v, ok = parseInt(arg)
			if f == 'N' {
				incrTTL, create = v, true
			} else {
				ttl, touch = v, true
			}
		case 'F':
			var v uint64
			v, ok = parseUint(arg, 32)
			flags = uint32(v)
		case 'C':
			cas, ok = parseUint(arg, 64)
			cas0 = ok && cas == 0
		case 'R':
			recache, ok = parseInt(arg)
			hasRecache = true
		case 'D':
			delta, ok = parseUint(arg, 64)
		case 'J':
			initial, ok = parseUint(arg, 64)
		case 'M':
			ok = len(arg) == 1
			if ok {
				mode = arg[0]
			}
		}
		if !ok {
			return fail(badToken)
		}
	}
	q.specTo = len(c.metaBuf)
	key := t[1]
	if q.b64 {
		if len(key) > base64.StdEncoding.EncodedLen(kv.MaxKeyLen) {
			return fail("CLIENT_ERROR bad command line format")
		}
		n, err := base64.StdEncoding.Decode(c.keyDec[:], key)
		if err != nil {
			return fail("CLIENT_ERROR error decoding key")
		}
		key = c.keyDec[:n]
	}
	if len(key) == 0 || len(key) > kv.MaxKeyLen {
		return fail("CLIENT_ERROR bad command line format")
	}
	q.first, q.n = c.used, 1
	m := c.cmd()
	c.keyed(m, key) // a copy: the data block may move the buffer
	switch verb {
	case 'g', 'e':
		m.Op, m.Peek = OpGet, peek || verb == 'e'
		if touch {
			m.Op = OpGat
			m.TTL, m.Expired = c.ttl(ttl)
			c.touches++
		}
		if create {
			m.Vivify = true
			m.VivifyTTL, _ = c.ttl(incrTTL)
		}
		m.HasRecache, m.Recache = hasRecache, uint32(min(max(recache, 0), 1<<32-1))
		m.CAS = cas // C: no value if the item still has this cas
		c.gets++
	case 'd':
		m.Op, m.CAS, m.CAS0, m.Invalid = OpDelete, cas, cas0, stale
		if touch && stale {
			m.SetTTL = true
			m.TTL, m.Expired = c.ttl(ttl)
		}
	case 'a':
		m.Op, m.Delta, m.Create, m.Initial = OpIncr, delta, create, initial
		m.TTL, _ = c.ttl(incrTTL)
		switch mode {
		case 0, 'I', 'i', '+':
		case 'D', 'd', '-':
			m.Decr = true
		default:
			c.used = q.first
			return fail("CLIENT_ERROR invalid mode for ma M token")
		}
	case 's':
		m.Op, m.Flags, m.CAS, m.CAS0, m.Invalid = OpStore, flags, cas, cas0, stale
		m.TTL, m.Expired = c.ttl(ttl)
		switch mode {
		case 0, 'S', 's':
			m.Mode = kv.StoreSet
		case 'E', 'e':
			m.Mode = kv.StoreAdd
		case 'A', 'a':
			m.Mode = kv.StoreAppend
		case 'P', 'p':
			m.Mode = kv.StorePrepend
		case 'R', 'r':
			m.Mode = kv.StoreReplace
		default:
			c.used = q.first
			return fail("CLIENT_ERROR invalid mode for ms M token")
		}
		if size > int64(c.d.be.MaxValue()) {
			c.used = q.first
			if size > maxSwallow {
				return c.fatalASCII("SERVER_ERROR object too large for cache")
			}
			if m.Mode == kv.StoreSet && cas == 0 {
				c.tooLarge(key, request{})
			} else {
				c.localASCII("SERVER_ERROR object too large for cache", false)
			}
			_, err := c.r.Discard(int(size) + 2)
			return err
		}
		buf := m.body(int(size) + 2)
		if _, err := io.ReadFull(c.r, buf); err != nil {
			return err
		}
		if buf[size] != '\r' || buf[size+1] != '\n' {
			c.used = q.first
			return c.fatalASCII("CLIENT_ERROR bad data chunk")
		}
		m.Value = buf[:size]
		c.sets++
	}
	c.reqs = append(c.reqs, q)
	return nil
}

func containsByte(s string, b byte) bool {
	for i := range len(s) {
		if s[i] == b {
			return true
		}
	}
	return false
}

// answerMeta writes a meta command's answer.
func (c *conn) answerMeta(q *request) {
	m := c.pool[q.first]
	w := c.w
	switch m.Status {
	case kv.StatusOK:
	case kv.StatusNotFound:
		if q.meta == 'g' || q.meta == 'e' {
			c.misses++
			if !q.quiet {
				w.WriteString("EN")
				c.metaFlags(q, m, true)
				w.WriteString("\r\n")
			}
			return
		}
		w.WriteString("NF")
		c.metaFlags(q, m, true)
		w.WriteString("\r\n")
		return
	case kv.StatusNotStored:
		w.WriteString("NS")
		c.metaFlags(q, m, true)
		w.WriteString("\r\n")
		return
	case kv.StatusExists:
		w.WriteString("EX")
		c.metaFlags(q, m, true)
		w.WriteString("\r\n")
		return
	case kv.StatusNotNumeric:
		w.WriteString("CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
		return
	default:
		w.WriteString(serverError(m.Status))
		w.WriteString("\r\n")
		return
	}
	num := c.scratch[:0]
	switch q.meta {
	case 'e':
		c.hits++
		w.WriteString("ME ")
		w.Write(m.Key)
		w.WriteString(" exp=")
		w.Write(strconv.AppendInt(num, c.ttlLeft(m), 10))
		if m.Meta.Timed {
			w.WriteString(" la=")
			w.Write(strconv.AppendInt(num, c.sinceAccess(m), 10))
		}
		w.WriteString(" cas=")
		w.Write(strconv.AppendUint(num, m.Meta.Version, 10))
		if m.Meta.Fetched {
			w.WriteString(" fetch=yes")
		} else {
			w.WriteString(" fetch=no")
		}
		w.WriteString(" size=")
		w.Write(strconv.AppendUint(num, uint64(m.N), 10))
		w.WriteString("\r\n")
	case 'g':
		c.hits++
		if !m.Meta.Timed && c.specHas(q, 'l') {
			w.WriteString("CLIENT_ERROR last access times not kept (kv.Config.AccessTimes)\r\n")
			return
		}
		if q.value && (m.CAS == 0 || m.Meta.Version != m.CAS) {
			w.WriteString("VA ")
			w.Write(strconv.AppendUint(num, uint64(m.N), 10))
			c.metaFlags(q, m, false)
			c.recacheFlags(m)
			w.WriteString("\r\n")
			w.Write(m.Out[:m.N])
			w.WriteString("\r\n")
			return
		}
		if !q.quiet {
			w.WriteString("HD")
			c.metaFlags(q, m, false)
			c.recacheFlags(m)
			w.WriteString("\r\n")
		}
	case 'a':
		if q.value {
			digits := len(strconv.AppendUint(num, m.Num, 10))
			w.WriteString("VA ")
			w.Write(strconv.AppendUint(num, uint64(digits), 10))
			c.metaFlags(q, m, false)
			w.WriteString("\r\n")
			w.Write(strconv.AppendUint(num, m.Num, 10))
			w.WriteString("\r\n")
			return
		}
		fallthrough
	default:
		if !q.quiet {
			w.WriteString("HD")
			c.metaFlags(q, m, false)
			w.WriteString("\r\n")
		}
	}
}

// metaFlags writes the return flags asked for, in their order; failed:
// only the key and the opaque (the item's values are not known).
func (c *conn) metaFlags(q *request, m *Cmd, failed bool) {
	w, spec, num := c.w, c.metaBuf[q.specFrom:q.specTo], c.scratch[:0]
	for i := 0; i < len(spec); i++ {
		f := spec[i]
		switch f {
		case 'O':
			n := int(spec[i+1])
			w.WriteString(" O")
			w.Write(spec[i+2 : i+2+n])
			i += 1 + n
			continue
		case 'k':
			w.WriteString(" k")
			if q.b64 {
				n := base64.StdEncoding.EncodedLen(len(m.Key))
				base64.StdEncoding.Encode(c.keyEnc[:n], m.Key)
				w.Write(c.keyEnc[:n])
				w.WriteString(" b")
			} else {
				w.Write(m.Key)
			}
			continue
		}
		if failed {
			continue
		}
		switch f {
		case 'c':
			w.WriteString(" c")
			w.Write(strconv.AppendUint(num, m.Meta.Version, 10))
		case 'f':
			w.WriteString(" f")
			w.Write(strconv.AppendUint(num, uint64(m.Meta.Flags), 10))
		case 's':
			w.WriteString(" s")
			w.Write(strconv.AppendUint(num, uint64(m.N), 10))
		case 't':
			w.WriteString(" t")
			w.Write(strconv.AppendInt(num, c.ttlLeft(m), 10))
		case 'h':
			if m.Meta.Fetched {
				w.WriteString(" h1")
			} else {
				w.WriteString(" h0")
			}
		case 'l':
			w.WriteString(" l")
			w.Write(strconv.AppendInt(num, c.sinceAccess(m), 10))
		}
	}
}

// specHas reports whether q asked for return flag f.
func (c *conn) specHas(q *request, f byte) bool {
	spec := c.metaBuf[q.specFrom:q.specTo]
	for i := 0; i < len(spec); i++ {
		switch spec[i] {
		case f:
			return true
		case 'O':
			i += 1 + int(spec[i+1])
		}
	}
	return false
}

// sinceAccess is the seconds since the item was last accessed, before this
// command (memcached's l and la).
func (c *conn) sinceAccess(m *Cmd) int64 {
	return max(int64(c.d.be.Now())-int64(m.Meta.Accessed), 0)
}

// ttlLeft is the seconds an item has left, -1 if it never expires (a
// touch's: the TTL it set).
func (c *conn) ttlLeft(m *Cmd) int64 {
	if m.Op == OpGat {
		if m.TTL == 0 {
			return -1
		}
		return int64(m.TTL)
	}
	if m.Meta.Expires == 0 {
		return -1
	}
	return max(int64(m.Meta.Expires)-int64(c.d.be.Now()), 0)
}
