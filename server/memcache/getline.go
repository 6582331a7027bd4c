package memcache

import (
	"bytes"

	"github.com/jakiro-kv/jakiro/kv"
)

// A get line (get, gets, gat, gats) is read a key at a time from the
// connection's reader, not as one line: its length is bounded by nothing
// but the client (libmemcached's mget sends 80 KB lines, memcached takes
// 400 KB ones), while what the door holds is bounded by a round. A round
// takes at most maxRoundCmds of its keys; the next round goes on with the
// line (getMore) after this one's answers are written, and only the last
// part ends with END.

// maxVerbScan bounds the leading spaces peekVerb looks past.
const maxVerbScan = 64

// peekVerb returns the get verb the buffered request starts with, if it
// does and a space follows it, having consumed it; "" (nothing consumed)
// for any other request.
func (c *conn) peekVerb() (string, error) {
	for n := c.r.Buffered(); ; n++ {
		b, err := c.r.Peek(n)
		if err != nil {
			return "", err
		}
		i := 0
		for i < len(b) && b[i] == ' ' {
			i++
		}
		j := i
		for j < len(b) && j-i < 5 && b[j] != ' ' && b[j] != '\n' {
			j++
		}
		switch {
		case j-i == 5 || i > maxVerbScan:
			return "", nil // a longer word, or odd input: the line parser's
		case j == len(b):
			if n >= bufSize {
				return "", nil
			}
			continue // the word may go on: wait for its end (ReadTimeout)
		case b[j] != ' ':
			return "", nil
		}
		verb := ""
		switch string(b[i:j]) { // constants: the verb is not a copy
		case "get":
			verb = "get"
		case "gets":
			verb = "gets"
		case "gat":
			verb = "gat"
		case "gats":
			verb = "gats"
		default:
			return "", nil
		}
		c.r.Discard(j)
		return verb, nil
	}
}

// startGet reads a get line's arguments after its verb: gat's exptime,
// then its keys (getKeys).
func (c *conn) startGet(verb string) error {
	c.getCAS = verb == "gets" || verb == "gats"
	c.getGat = verb[1] == 'a'
	c.getTTL, c.getExp = 0, false
	if c.getGat {
		tok, eol, err := c.token()
		if err != nil {
			return err
		}
		if eol {
			return c.localASCII("ERROR", false)
		}
		exp, ok := parseInt(tok)
		if !ok {
			if err := c.skipLine(); err != nil {
				return err
			}
			return c.localASCII("CLIENT_ERROR invalid exptime argument", false)
		}
		c.getTTL, c.getExp = c.ttl(exp)
		c.touches++
	}
	c.getMore = true
	return c.getKeys(true)
}

// getKeys reads the keys of the current get line into commands until the
// line ends or the round is full (getMore stays set), as one request.
func (c *conn) getKeys(first bool) error {
	start := c.used
	bad := false
	for c.used < maxRoundCmds {
		tok, eol, err := c.token()
		if err != nil {
			c.used = start
			return err
		}
		if eol {
			c.getMore = false
			break
		}
		if len(tok) > kv.MaxKeyLen {
			// The error alone answers the line, as memcached: this
			// round's keys are dropped (a line longer than a round has
			// had its earlier keys answered already); the rest of the
			// line is skipped.
			c.getMore, bad = false, true
			c.used = start
			if err := c.skipLine(); err != nil {
				c.used = start
				return err
			}
			break
		}
		m := c.cmd()
		m.Op = OpGet
		if c.getGat {
			m.Op, m.TTL, m.Expired = OpGat, c.getTTL, c.getExp
		}
		c.keyed(m, tok)
	}
	n := c.used - start
	if first && n == 0 && !c.getMore {
		if bad {
			return c.localASCII("CLIENT_ERROR bad command line format", false)
		}
		return c.localASCII("ERROR", false)
	}
	c.gets += uint64(n)
	c.reqs = append(c.reqs, request{kind: kindGet, first: start, n: n, withCAS: c.getCAS, more: c.getMore || bad})
	if bad {
		return c.localASCII("CLIENT_ERROR bad command line format", false)
	}
	return nil
}

// token reads the next space-separated token of the line being read,
// leaving what follows it; eol (consumed) at the line's end. The token
// aliases the reader's buffer until its next read. One longer than a key
// can be is returned cut at kv.MaxKeyLen+1 bytes, unconsumed.
func (c *conn) token() (tok []byte, eol bool, err error) {
	for {
		b, _ := c.r.Peek(c.r.Buffered())
		i := 0
		for i < len(b) && b[i] == ' ' {
			i++
		}
		if i > 0 {
			c.r.Discard(i)
			b = b[i:]
		}
		j := 0
		for j < len(b) && b[j] != ' ' && b[j] != '\n' {
			j++
		}
		if j < len(b) {
			tok = b[:j]
			if b[j] == '\n' && len(tok) > 0 && tok[len(tok)-1] == '\r' {
				tok = tok[:len(tok)-1]
			}
			if len(tok) == 0 { // "\n" or "\r\n": the line's end
				c.r.Discard(j + 1)
				return nil, true, nil
			}
			c.r.Discard(j)
			return tok, false, nil
		}
		if len(b) > kv.MaxKeyLen+1 {
			return b[:kv.MaxKeyLen+1], false, nil
		}
		if _, err := c.r.Peek(len(b) + 1); err != nil {
			return nil, false, err
		}
	}
}

// skipLine discards the rest of the line being read, its end included.
func (c *conn) skipLine() error {
	for {
		b, _ := c.r.Peek(c.r.Buffered())
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			c.r.Discard(i + 1)
			return nil
		}
		c.r.Discard(len(b))
		if _, err := c.r.Peek(1); err != nil {
			return err
		}
	}
}
