package memcache

import (
	"encoding/base64"
	"io"
	"strconv"

	"github.com/jakiro-kv/jakiro/kv"
)

// The meta commands (memcached 1.6's protocol.txt, "Meta Commands"):
//
//	mg <key> <flags>*                 get:    b c C E f h k l N O q R s t T u v
//	ms <key> <datalen> <flags>*\r\n   set:    b c C E F I k N O q s T M(E A P R S)
//	md <key> <flags>*                 delete: b C E F I k O q T x
//	ma <key> <flags>*                 arith:  b c C D E J k M(I + D -) N O q t T v
//	me <key> [b]                      debug:  exp, la, cas, fetch, size
//	mn                                MN: the answers before it are out
//
// As memcached's, every command takes every flag its parser knows
// (metaKnown) and ignores those it has no use for; each answers its own
// return flags (metaReturns) in the order asked, then mg's Z, X and W. T
// and N act where they stand among the flags: a t before them reports the
// TTL before they set it (on an item N created, -1), and of T and N on a
// created item the last one sets its TTL; mg's R compares the TTL T set
// if T came first. q hides mg's EN and the others' success (HD, ma's VA
// too), not mg's HD or VA; errors always come; an
// answer that is not HD carries only k and O (and ms's c as c0).
//
// h and l report the item's fetched bit and seconds since its last access
// as they were before the mg (kv.Meta; l needs the store's access times,
// kv.Config.AccessTimes, which `jakiro server --memcached` keeps: without
// them an mg asking for l is answered CLIENT_ERROR). u reads without
// marking the item, with T too (so does me). Every read marks it: get,
// gets, gat, mg, touch, the binary gets and an RFP client's Get alike, as
// memcached counts every fetch. I, N, R and the answers' X, W and Z are
// memcached's serve-stale and recache (stale.go); mg's C sends no value
// while the item's cas is C's; ms's, md's and ma's C, N, T, E and md's x
// are in metawrite.go. E, x, ms's N and its s came with memcached 1.6.20
// (N, s) and 1.6.27 (E, x), and are answered as memcached's code since
// does; 1.6.18 refused E and x as invalid flags. E0 is refused: the store
// cannot keep a cas of 0 (memcached would). An ms whose line names a
// length has its data block read (or skipped, after an error), as
// memcached does after its errors but one (a line of too many flags,
// whose block memcached reads as commands).

// maxOpaque is the longest O token, as memcached.
const maxOpaque = 32

// maxMetaTokens is the most tokens a meta command line may have, its
// command and key included (memcached's MFLAG_MAX_OPT_LENGTH, less its
// empty last token).
const maxMetaTokens = 19

// metaKnown are the flags memcached 1.6's meta commands take (its
// _meta_flag_preparse, which all of them share).
const metaKnown = "bcCDEfFhIJklLMNOPqRstTuvx"

// metaReturns are the return flags each command answers, and T and N,
// kept in a request's spec as markers: a t reports the TTL as they left
// it.
func metaReturns(verb byte) string {
	switch verb {
	case 'g':
		return "cfhklOstTN"
	case 's':
		return "ckOs"
	case 'd':
		return "kO"
	case 'a':
		return "ckOtTN"
	}
	return ""
}

// metaSize is an ms line's data length, if it has one: only then is a
// data block read (the parser and the pump's requestLen go by it).
func metaSize(t [][]byte) (int64, bool) {
	if len(t) < 3 {
		return 0, false
	}
	size, ok := parseInt(t[2])
	return size, ok && size >= 0
}

// parseInt32 parses a decimal as memcached's safe_strtol: a 64-bit
// number, cut to its low 32 bits.
func parseInt32(b []byte) (int64, bool) {
	v, ok := parseInt(b)
	return int64(int32(v)), ok
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
	if verb == 'e' {
		return c.metaDebug(t)
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
	if len(t) > maxMetaTokens {
		if verb == 'g' {
			return fail("CLIENT_ERROR options flags are too long")
		}
		return fail("CLIENT_ERROR options flags too long")
	}
	key := t[1]
	if len(key) > kv.MaxKeyLen {
		return fail("CLIENT_ERROR bad command line format")
	}
	// memcached's words: its parser keeps the last flag's error (F's has
	// none of its own); md and ma answer any with one line.
	const badToken = "CLIENT_ERROR bad token in command line format"
	invalid, duplicate, errMsg, badF := "CLIENT_ERROR invalid flag", "CLIENT_ERROR duplicate flag", "", false
	if verb == 'd' || verb == 'a' {
		invalid = "CLIENT_ERROR invalid or duplicate flag"
		duplicate = invalid
	}
	returns := metaReturns(verb)
	q := request{kind: kindMeta, meta: verb, specFrom: len(c.metaBuf)}
	var seen [2]uint64
	var ttl, vivTTL, recache int64
	var flags uint32
	var cas, version, delta, initial uint64 = 0, 0, 1, 0
	var mode byte
	touch, vivify, hasRecache, hasCAS, hasVersion := false, false, false, false, false
	peek, stale, tomb, longOpaque := false, false, false, false
	tPos, nPos, rPos := -1, -1, -1
	for i, tok := range t[from:] {
		f := tok[0]
		if f >= 127 || seen[f>>6]&(1<<(f&63)) != 0 {
			return fail(duplicate)
		}
		seen[f>>6] |= 1 << (f & 63)
		if !containsByte(metaKnown, f) {
			return fail(invalid)
		}
		arg := tok[1:]
		var ok bool
		switch f {
		case 'b':
			q.b64 = true
			n, err := base64.StdEncoding.Decode(c.keyDec[:], t[1])
			if err != nil || n == 0 {
				errMsg = "CLIENT_ERROR error decoding key"
			}
			key = c.keyDec[:n]
		case 'q':
			q.quiet = true
		case 'v':
			q.value = true
		case 'u':
			peek = true
		case 'I':
			stale = true
		case 'x':
			tomb = true
		case 'O':
			longOpaque = longOpaque || len(arg) > maxOpaque
		case 'T', 'N', 'R':
			var v int64
			if v, ok = parseInt32(arg); !ok {
				errMsg = badToken
				break
			}
			switch f {
			case 'T':
				ttl, touch, tPos = v, true, i
			case 'N':
				vivTTL, vivify, nPos = v, true, i
			case 'R':
				recache, hasRecache, rPos = v, true, i
			}
		case 'C', 'E':
			var v uint64
			if v, ok = parseUint(arg, 64); !ok {
				errMsg = badToken
			} else if f == 'C' {
				cas, hasCAS = v, true
			} else {
				version, hasVersion = v, true
			}
		case 'F':
			var v uint64
			v, ok = parseUint(arg, 32)
			flags, badF = uint32(v), badF || !ok
		case 'M':
			if len(arg) != 1 {
				errMsg = "CLIENT_ERROR incorrect length for M token"
			} else {
				mode = arg[0]
			}
		case 'J':
			if initial, ok = parseUint(arg, 64); !ok {
				errMsg = "CLIENT_ERROR invalid numeric initial value"
			}
		case 'D':
			if delta, ok = parseUint(arg, 64); !ok {
				errMsg = "CLIENT_ERROR invalid numeric delta value"
			}
		}
		if containsByte(returns, f) {
			c.metaBuf = append(c.metaBuf, f)
			if f == 'O' {
				arg = arg[:min(len(arg), maxOpaque)]
				c.metaBuf = append(c.metaBuf, byte(len(arg)))
				c.metaBuf = append(c.metaBuf, arg...)
			}
		}
	}
	switch {
	case errMsg != "" && (verb == 'd' || verb == 'a'), badF && (verb == 'd' || verb == 'a'):
		return fail(invalid)
	case errMsg != "":
		return fail(errMsg)
	case badF:
		return fail("CLIENT_ERROR bad command line format")
	case longOpaque:
		return fail("CLIENT_ERROR opaque token too long")
	case hasVersion && version == 0:
		return fail("CLIENT_ERROR E0: the door keeps no cas of 0")
	case len(key) == 0:
		return fail("CLIENT_ERROR bad command line format")
	}
	q.specTo = len(c.metaBuf)
	q.first, q.n = c.used, 1
	m := c.cmd()
	c.keyed(m, key) // a copy: the data block may move the buffer
	m.MetaVerb, m.Version, m.TLast = verb, version, tPos > nPos
	if touch {
		m.TTL, m.Expired = c.ttl(ttl)
		m.SetTTL = true
	}
	if vivify {
		m.Vivify = true
		m.VivifyTTL, _ = c.ttl(vivTTL)
	}
	switch verb {
	case 'g':
		m.Op, m.Peek = OpGet, peek
		if touch {
			m.Op = OpGat
			c.touches++
		}
		m.HasRecache, m.Recache, m.RAfterT = hasRecache, uint32(min(max(recache, 0), 1<<32-1)), rPos > tPos && touch
		m.CAS = cas // C: no value if the item still has this cas
		c.gets++
	case 'd':
		m.Op, m.CAS, m.CAS0, m.Invalid, m.Tombstone, m.Flags = OpDelete, cas, hasCAS && cas == 0, stale, tomb, flags
	case 'a':
		m.Op, m.Delta, m.Initial, m.CAS = OpIncr, delta, initial, cas
		switch mode {
		case 0, 'I', 'i', '+':
		case 'D', 'd', '-':
			m.Decr = true
		default:
			c.used = q.first
			return fail("CLIENT_ERROR invalid mode for ma M token")
		}
	case 's':
		m.Op, m.Flags, m.CAS, m.CAS0, m.Invalid = OpStore, flags, cas, hasCAS && cas == 0, stale
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
		m.Vivify = vivify && (m.Mode == kv.StoreAppend || m.Mode == kv.StorePrepend)
		if size > int64(c.d.be.MaxValue()) {
			// memcached unlinks the key whatever the mode: a failed ms
			// leaves no older value.
			c.used = q.first
			if size > maxSwallow {
				return c.fatalASCII("SERVER_ERROR object too large for cache")
			}
			c.tooLarge(key, request{})
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

// metaDebug parses me <key> [b]: memcached reads a b right after the key
// and ignores anything else.
func (c *conn) metaDebug(t [][]byte) error {
	key := t[1]
	if len(key) > kv.MaxKeyLen {
		return c.localASCII("CLIENT_ERROR bad command line format", false)
	}
	q := request{kind: kindMeta, meta: 'e', specFrom: len(c.metaBuf), specTo: len(c.metaBuf)}
	if len(t) > 2 && string(t[2]) == "b" {
		n, err := base64.StdEncoding.Decode(c.keyDec[:], key)
		if err != nil || n == 0 {
			return c.localASCII("CLIENT_ERROR bad command line format", false)
		}
		key, q.b64 = c.keyDec[:n], true
	}
	q.first, q.n = c.used, 1
	m := c.cmd()
	c.keyed(m, key)
	m.Op, m.Peek, m.MetaVerb = OpGet, true, 'e'
	c.gets++
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
		w.WriteString("HD") // memcached's mg q hides only EN
		c.metaFlags(q, m, false)
		c.recacheFlags(m)
		w.WriteString("\r\n")
	case 'a':
		if q.quiet {
			return // memcached's ma q hides a success, its number too
		}
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
	exp := c.ttlLeft(m) // the TTL left as T and N leave it, where t stands
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
			if f == 'c' && q.meta == 's' {
				w.WriteString(" c0") // memcached's: no cas stored
			}
			continue
		}
		switch f {
		case 'T':
			exp = ttlOf(m.TTL)
		case 'N':
			if m.Created {
				exp = ttlOf(m.VivifyTTL)
			}
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
			w.Write(strconv.AppendInt(num, exp, 10))
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

// ttlLeft is the seconds an item had left before the command (-1 if it
// never expires, as an item N created).
func (c *conn) ttlLeft(m *Cmd) int64 {
	if m.Meta.Expires == 0 || m.Created {
		return -1
	}
	return max(int64(m.Meta.Expires)-int64(c.d.be.Now()), 0)
}

// ttlOf is a TTL set in seconds as t reports it.
func ttlOf(ttl uint32) int64 {
	if ttl == 0 {
		return -1
	}
	return int64(ttl)
}
