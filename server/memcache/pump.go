package memcache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"syscall"
	"unsafe"
)

// A connection on a socket waits for its clients inside one call of the
// socket's RawConn.Read, the pump, instead of one net-style Read per round.
// Each RawConn.Read starts by clearing the netpoller's record that the
// socket became readable, so its first look must be a read, and between
// request-and-answer rounds that read finds nothing: one system call of
// four per command, which memcached does not make. Within one
// RawConn.Read the record is kept across waits: after a read that did not
// fill the buffer (the socket was drained), the pump waits for the next
// readiness without reading, and a request that arrived meanwhile has set
// it already.
//
// Inside the callback nothing may wait on the socket (a nested read would
// wait for the read lock this call holds), so the pump runs rounds only
// over requests whose bytes are all buffered (complete); a request that
// is not is finished by round() outside the pump, with its reads bounded
// as before. complete is conservative: it may call a request incomplete
// that the parser would finish from the buffer (that only costs the slow
// path), never the reverse (FuzzPump).

var (
	// errWouldBlock: the pump's non-blocking read found nothing.
	errWouldBlock = errors.New("memcache: nothing to read")
	// errPumpShort: a parser wanted bytes complete did not count (a bug:
	// the connection is closed rather than left to wait in the callback).
	errPumpShort = errors.New("memcache: request longer than scanned")
)

// pump runs the rounds that the bytes read without waiting complete; true
// to wait for readability and be called again. False: c.pumpErr ended the
// connection, it quit, or an incomplete request is buffered (round()).
func (c *conn) pump() (wait bool) {
	for {
		c.midRound = false
		if c.dumpMore { // a metadump's next chunk: nothing to read
			if err := c.round(0); err != nil {
				c.pumpErr = err
				return false
			}
			continue
		}
		if c.r.Buffered() == 0 {
			if c.getMore {
				return false // the rest of a get line: round(), bounded
			}
			if c.drained {
				c.drained = false
				return true
			}
			if _, err := c.r.Peek(1); err != nil {
				if err == errWouldBlock {
					return true
				}
				c.pumpErr = err
				return false
			}
		}
		n := c.complete()
		if n == 0 {
			return false
		}
		if err := c.round(n); err != nil {
			c.pumpErr = err
			return false
		}
		if c.quit {
			return false
		}
	}
}

// pumpRead is the pump's read: never waits. It notes a read that did not
// fill p: the socket held no more then.
func (c *conn) pumpRead(p []byte) (int, error) {
	if c.midRound {
		return 0, errPumpShort
	}
	n, err := c.readNow(p)
	c.drained = err == nil && n > 0 && n < len(p)
	return n, err
}

// pumpFn is the RawConn.Read callback: false to wait for readability.
// Called again after a wait, it was woken by the netpoller, which has
// polled in this spin epoch (spin.go).
func (c *conn) pumpFn(fd uintptr) bool {
	c.fd = fd
	if c.waited {
		c.spinEpoch = c.d.spin.epoch.Load()
	}
	c.waited = true
	for c.pump() {
		got, stop := c.spin()
		if stop {
			return true
		}
		if !got {
			return false
		}
	}
	return true
}

// sysRead reads a non-blocking socket once: errWouldBlock when it is empty.
// recvfrom (and sendto in rawIO.write), not read and write: the socket
// calls skip the file layer's checks, a few percent of the door's server
// CPU per command (memcaslap against one partition: 8% more commands/s).
func sysRead(fd uintptr, p []byte) (int, error) {
	for {
		n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), 0, 0, 0)
		switch e {
		case 0:
			if n == 0 {
				return 0, io.EOF
			}
			return int(n), nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, errWouldBlock
		}
		return 0, e
	}
}

// complete is how many leading buffered bytes hold whole requests (0: the
// first is not whole, or complete cannot tell).
func (c *conn) complete() int {
	b, _ := c.r.Peek(c.r.Buffered())
	total := 0
	if c.getMore { // the rest of a get line comes first
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return 0
		}
		total, b = i+1, b[i+1:]
	}
	for len(b) > 0 {
		n := c.requestLen(b)
		if n <= 0 || n > len(b) {
			break
		}
		total += n
		b = b[n:]
	}
	return total
}

// requestLen is the length of the request b starts with, as the parsers
// read it, when that is known from b: 0 when it is not (a line without
// its end), past len(b) when its data is still to come.
func (c *conn) requestLen(b []byte) int {
	if b[0] == binaryReq {
		if len(b) < headerLen {
			return 0
		}
		return headerLen + int(binary.BigEndian.Uint32(b[8:12]))
	}
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return 0
	}
	line := b[:i+1]
	verb := firstWord(line)
	if string(verb) == "ms" {
		c.tokenize(line)
		size, ok := metaSize(c.toks)
		switch {
		case !ok:
			return len(line)
		case size > maxSwallow:
			return 0
		}
		return len(line) + int(size) + 2
	}
	if !storageVerb(verb) {
		return len(line) // a get, most of the time: no tokens needed
	}
	c.tokenize(line)
	if len(c.toks) == 0 || !storageVerb(c.toks[0]) {
		return len(line)
	}
	// A storage command reads its data block when its line has the shape
	// (whatever else is wrong with it, asciiStore may skip the block).
	size, _, shape := storeShape(c.toks)
	if shape != shapeOK {
		return len(line)
	}
	if size > maxSwallow {
		return 0
	}
	return len(line) + int(size) + 2
}

// firstWord is tokenize's first token of line, or nil.
func firstWord(line []byte) []byte {
	line = trimEOL(line)
	start, end := word(line, 0)
	return line[start:end]
}

// storageVerb: a command with a data block.
func storageVerb(verb []byte) bool {
	switch string(verb) {
	case "set", "add", "replace", "append", "prepend", "cas":
		return true
	}
	return false
}
