package memcache

import (
	"bytes"
	"crypto/subtle"
	"encoding/binary"
	"io"

	"github.com/jakiro-kv/jakiro/kv"
)

// The binary protocol: a 24-byte header (magic, opcode, key length, extras
// length, body length, opaque, cas), then extras, key and value. Quiet
// variants answer only failures (getq, getkq: only hits).

const (
	binaryReq  = 0x80
	binaryResp = 0x81
	headerLen  = 24
)

// Opcodes.
const (
	opGet       = 0x00
	opSet       = 0x01
	opAdd       = 0x02
	opReplace   = 0x03
	opDelete    = 0x04
	opIncr      = 0x05
	opDecr      = 0x06
	opQuit      = 0x07
	opFlush     = 0x08
	opGetQ      = 0x09
	opNoop      = 0x0a
	opVersion   = 0x0b
	opGetK      = 0x0c
	opGetKQ     = 0x0d
	opAppend    = 0x0e
	opPrepend   = 0x0f
	opStat      = 0x10
	opSetQ      = 0x11
	opAddQ      = 0x12
	opReplaceQ  = 0x13
	opDeleteQ   = 0x14
	opIncrQ     = 0x15
	opDecrQ     = 0x16
	opQuitQ     = 0x17
	opFlushQ    = 0x18
	opAppendQ   = 0x19
	opPrependQ  = 0x1a
	opVerbosity = 0x1b
	opTouch     = 0x1c
	opGat       = 0x1d
	opGatQ      = 0x1e
	opSASLList  = 0x20
	opSASLAuth  = 0x21
	opSASLStep  = 0x22
	opGatK      = 0x23
	opGatKQ     = 0x24
)

// Statuses.
const (
	stOK         = 0x00
	stNotFound   = 0x01
	stExists     = 0x02
	stTooLarge   = 0x03
	stInvalid    = 0x04
	stNotStored  = 0x05
	stNonNumeric = 0x06
	stAuthError  = 0x20
	stUnknown    = 0x81
	stNoMemory   = 0x82
)

// quiet reports whether op answers only failures.
func quiet(op byte) bool {
	switch op {
	case opGetQ, opGetKQ, opSetQ, opAddQ, opReplaceQ, opDeleteQ, opIncrQ, opDecrQ, opQuitQ, opFlushQ, opAppendQ, opPrependQ, opGatQ, opGatKQ:
		return true
	}
	return false
}

// parseBinary reads one binary request. A header that cannot be trusted
// (lengths that do not add up, a body over the limit) closes the
// connection: its bytes cannot be skipped safely.
func (c *conn) parseBinary() error {
	h := c.scratch[:headerLen]
	if _, err := io.ReadFull(c.r, h); err != nil {
		return err
	}
	be := binary.BigEndian
	op, klen, elen := h[1], int(be.Uint16(h[2:])), int(h[4])
	blen, opaque, cas := int64(be.Uint32(h[8:])), be.Uint32(h[12:]), be.Uint64(h[16:])
	q := request{binary: true, opcode: op, opaque: opaque, noreply: quiet(op)}
	if value := blen - int64(klen+elen); value > int64(c.d.be.MaxValue()) && value <= maxSwallow &&
		klen <= kv.MaxKeyLen && storeOpcode(op) {
		return c.binaryTooLarge(q, elen, klen, int(value))
	}
	if int64(klen+elen) > blen || klen > kv.MaxKeyLen || blen > int64(c.d.be.MaxValue())+kv.MaxKeyLen+64 {
		c.d.badInput.Add(1)
		q.kind, q.msg, q.noreply = kindLocal, "\x04Invalid arguments", false
		c.reqs = append(c.reqs, q)
		return errClose
	}
	// The body goes into a command's value buffer: extras and key are
	// copied out of it, the value stays there.
	first := c.used
	m := c.cmd()
	body := m.body(int(blen))
	if _, err := io.ReadFull(c.r, body); err != nil {
		return err
	}
	extras, key, value := body[:elen], body[elen:elen+klen], body[elen+klen:]
	c.used = first // the command is used only if the request runs one
	local := func(status byte, msg string) error {
		q.kind, q.msg = kindLocal, string([]byte{status})+msg
		if status != stOK {
			q.noreply = false
		}
		c.reqs = append(c.reqs, q)
		return nil
	}
	if !c.authed {
		switch op {
		case opSASLList, opSASLAuth, opSASLStep, opVersion, opNoop, opQuit, opQuitQ:
		default:
			return local(stAuthError, "Authentication required")
		}
	}
	keyed := func(kind reqKind, o Op, needExtras int) (*Cmd, bool) {
		if len(extras) != needExtras || len(key) == 0 {
			local(stInvalid, "Invalid arguments")
			return nil, false
		}
		c.used = first + 1
		m.Op = o
		c.keyed(m, key)
		q.kind, q.first, q.n = kind, first, 1
		c.reqs = append(c.reqs, q)
		return m, true
	}
	be32 := func(b []byte) uint32 { return be.Uint32(b) }
	switch op {
	case opGet, opGetQ, opGetK, opGetKQ:
		if _, ok := keyed(kindGet, OpGet, 0); ok {
			c.gets++
		}
	case opGat, opGatQ, opGatK, opGatKQ, opTouch:
		kind, o := kindGet, OpGat
		if op == opTouch {
			kind, o = kindTouch, OpTouch
		}
		if len(extras) == 4 {
			if m, ok := keyed(kind, o, 4); ok {
				m.TTL, m.Expired = c.ttl(int64(int32(be32(extras))))
				c.touches++
			}
		} else {
			local(stInvalid, "Invalid arguments")
		}
	case opSet, opSetQ, opAdd, opAddQ, opReplace, opReplaceQ, opAppend, opAppendQ, opPrepend, opPrependQ:
		mode, need := kv.StoreSet, 8
		switch op {
		case opAdd, opAddQ:
			mode = kv.StoreAdd
		case opReplace, opReplaceQ:
			mode = kv.StoreReplace
		case opAppend, opAppendQ:
			mode, need = kv.StoreAppend, 0
		case opPrepend, opPrependQ:
			mode, need = kv.StorePrepend, 0
		}
		var flags uint32
		var exp int64
		if need == 8 && len(extras) == 8 {
			flags, exp = be32(extras), int64(int32(be32(extras[4:])))
		}
		if m, ok := keyed(kindStore, OpStore, need); ok {
			m.Mode, m.Flags, m.CAS, m.Value = mode, flags, cas, value
			m.TTL, m.Expired = c.ttl(exp)
			c.sets++
		}
	case opDelete, opDeleteQ:
		keyed(kindDelete, OpDelete, 0)
	case opIncr, opIncrQ, opDecr, opDecrQ:
		if m, ok := keyed(kindIncr, OpIncr, 20); ok {
			m.Delta, m.Initial = be.Uint64(extras), be.Uint64(extras[8:])
			m.Decr = op == opDecr || op == opDecrQ
			exp := be32(extras[16:])
			m.Create = exp != 0xffffffff
			m.TTL, m.Expired = c.ttl(int64(int32(exp)))
		}
	case opFlush, opFlushQ:
		var delay int64
		switch len(extras) {
		case 0:
		case 4:
			delay = int64(be32(extras))
		default:
			return local(stInvalid, "Invalid arguments")
		}
		ttl, _ := c.ttl(delay)
		q.kind = kindFlush
		q.first, q.n = c.flushCmds(ttl)
		c.reqs = append(c.reqs, q)
	case opNoop:
		return local(stOK, "")
	case opVersion:
		return local(stOK, Version)
	case opVerbosity:
		return local(stOK, "")
	case opStat:
		q.kind = kindStats
		switch string(key) {
		case "":
			q.args = statsGeneral
		case "settings":
			q.args = statsSettings
		default:
			q.args = statsNone
		}
		c.reqs = append(c.reqs, q)
	case opQuit, opQuitQ:
		q.kind = kindQuit
		c.reqs = append(c.reqs, q)
		c.quit = true
	case opSASLList:
		return local(stOK, "PLAIN")
	case opSASLAuth, opSASLStep:
		// PLAIN: [authzid] NUL authcid NUL passwd; the password is the token.
		parts := bytes.Split(value, []byte{0})
		if string(key) != "PLAIN" || len(parts) != 3 || c.d.cfg.AuthToken == "" ||
			subtle.ConstantTimeCompare(parts[2], []byte(c.d.cfg.AuthToken)) != 1 {
			if c.d.cfg.AuthToken == "" {
				return local(stOK, "Authenticated") // no token: nothing to prove
			}
			c.d.authFails.Add(1)
			c.authSleep = true
			if c.authFails++; c.authFails >= maxAuthFails {
				c.quit = true
			}
			return local(stAuthError, "Auth failure")
		}
		c.authed = true
		return local(stOK, "Authenticated")
	default:
		return local(stUnknown, "Unknown command")
	}
	return nil
}

// storeOpcode: a request with a value to store.
func storeOpcode(op byte) bool {
	switch op {
	case opSet, opSetQ, opAdd, opAddQ, opReplace, opReplaceQ, opAppend, opAppendQ, opPrepend, opPrependQ:
		return true
	}
	return false
}

// binaryTooLarge answers a storage request whose value is over the
// maximum with status 0x03 and skips the value, as memcached; a set also
// deletes its key (tooLarge).
func (c *conn) binaryTooLarge(q request, elen, klen, vlen int) error {
	first := c.used
	m := c.cmd()
	head := m.body(elen + klen)
	if _, err := io.ReadFull(c.r, head); err != nil {
		return err
	}
	c.used = first
	q.noreply = false // quiet commands answer failures
	if (q.opcode == opSet || q.opcode == opSetQ) && klen > 0 {
		c.tooLarge(head[elen:], q) // copies the key before the discard
	} else {
		q.kind, q.msg = kindLocal, "\x03Too large."
		c.reqs = append(c.reqs, q)
	}
	_, err := c.r.Discard(vlen)
	return err
}

// answerBinary writes a binary request's answer.
func (c *conn) answerBinary(q *request) {
	switch q.kind {
	case kindLocal:
		if q.noreply && q.msg[0] == stOK {
			return
		}
		c.packet(q, q.msg[0], 0, nil, nil, []byte(q.msg[1:]))
	case kindQuit:
		if !q.noreply {
			c.packet(q, stOK, 0, nil, nil, nil)
		}
	case kindGet:
		m := c.pool[q.first]
		if m.Status != kv.StatusOK {
			c.misses++
			if !q.noreply {
				c.fail(q, m.Status)
			}
			return
		}
		c.hits++
		flags := c.scratch[:4]
		binary.BigEndian.PutUint32(flags, m.Meta.Flags)
		var key []byte
		switch q.opcode {
		case opGetK, opGetKQ, opGatK, opGatKQ:
			key = m.Key
		}
		c.packet(q, stOK, m.Meta.Version, flags, key, m.Out[:m.N])
	case kindStore, kindTouch:
		m := c.pool[q.first]
		if m.Status != kv.StatusOK {
			c.fail(q, m.Status)
			return
		}
		if !q.noreply {
			c.packet(q, stOK, m.Meta.Version, nil, nil, nil)
		}
	case kindDelete:
		m := c.pool[q.first]
		if m.Status != kv.StatusOK {
			c.fail(q, m.Status)
		} else if !q.noreply {
			c.packet(q, stOK, 0, nil, nil, nil)
		}
	case kindIncr:
		m := c.pool[q.first]
		if m.Status != kv.StatusOK {
			c.fail(q, m.Status)
			return
		}
		if !q.noreply {
			v := c.scratch[:8]
			binary.BigEndian.PutUint64(v, m.Num)
			c.packet(q, stOK, m.Meta.Version, nil, nil, v)
		}
	case kindFlush:
		if !q.noreply {
			c.packet(q, stOK, 0, nil, nil, nil)
		}
	case kindTooLarge:
		c.fail(q, kv.StatusTooLarge)
	case kindStats:
		var stats []Stat
		switch q.args {
		case statsGeneral:
			stats = c.d.stats(c.d.be.Stats())
		case statsSettings:
			stats = c.d.settings()
		}
		for _, s := range stats {
			c.packet(q, stOK, 0, nil, []byte(s.Name), []byte(s.Value))
		}
		c.packet(q, stOK, 0, nil, nil, nil)
	}
}

// fail answers a failed command with the binary status for st (quiet
// commands too: they answer failures).
func (c *conn) fail(q *request, st kv.Status) {
	status, msg := byte(stUnknown), st.String()
	switch st {
	case kv.StatusNotFound:
		status, msg = stNotFound, "Not found"
		if q.kind == kindGet && (q.opcode == opGetQ || q.opcode == opGetKQ || q.opcode == opGatQ || q.opcode == opGatKQ) {
			return // a quiet get says nothing on a miss
		}
	case kv.StatusExists:
		status, msg = stExists, "Data exists for key."
	case kv.StatusNotStored:
		status, msg = stNotStored, "Not stored."
		m := c.pool[q.first]
		switch m.Mode {
		case kv.StoreAdd:
			status, msg = stExists, "Data exists for key."
		case kv.StoreReplace:
			status, msg = stNotFound, "Not found"
		}
	case kv.StatusTooLarge:
		status, msg = stTooLarge, "Too large."
	case kv.StatusNoMemory:
		status, msg = stNoMemory, "Out of memory"
	case kv.StatusNotNumeric:
		status, msg = stNonNumeric, "Non-numeric server-side value for incr or decr"
	case kv.StatusBadKey:
		status, msg = stInvalid, "Invalid arguments"
	}
	c.head(q, status, 0, nil, nil, len(msg))
	c.w.WriteString(msg)
}

// packet writes one response.
func (c *conn) packet(q *request, status byte, cas uint64, extras, key, value []byte) {
	c.head(q, status, cas, extras, key, len(value))
	c.w.Write(value)
}

// head writes a response's header, extras and key; its value of vlen
// bytes follows.
func (c *conn) head(q *request, status byte, cas uint64, extras, key []byte, vlen int) {
	h := &c.hdr
	be := binary.BigEndian
	h[0], h[1] = binaryResp, q.opcode
	be.PutUint16(h[2:], uint16(len(key)))
	h[4] = byte(len(extras))
	be.PutUint16(h[6:], uint16(status))
	be.PutUint32(h[8:], uint32(len(extras)+len(key)+vlen))
	be.PutUint32(h[12:], q.opaque)
	be.PutUint64(h[16:], cas)
	c.w.Write(h[:])
	c.w.Write(extras)
	c.w.Write(key)
}
