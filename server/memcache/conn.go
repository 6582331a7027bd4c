package memcache

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"time"

	"github.com/jakiro-kv/jakiro/kv"
)

// A connection works in rounds: it reads every request already buffered
// (pipelined, up to maxRoundCmds commands; at least one, waiting for it),
// hands each partition the commands of its keys in one Batch, waits for
// them all, then writes the answers in request order and flushes once.
// Commands of one partition run in request order, so a connection sees its
// own writes; commands of different partitions touch different keys.
type conn struct {
	d    *Door
	nc   net.Conn
	sock io.ReadWriter // nc, or its raw reads and writes (rawio.go)
	r    *bufio.Reader
	w    *bufio.Writer
	// Deadlines cost a runtime timer update each, more than a command
	// (deadline.go): set only when a read waits within a round, and the
	// write deadline renewed coarsely.
	midRound  bool      // the round's first byte arrived: reads are bounded
	readArmed bool      // a read deadline is set
	armedIn   bool      // it was set in this round
	writeAt   time.Time // when the write deadline was last set

	// The pump (pump.go): reads that never wait, inside RawConn.Read.
	pumping bool                      // reads go to readNow
	readNow func([]byte) (int, error) // the socket's non-blocking read
	fd      uintptr                   // the socket, while pumping
	drained bool                      // the last read left the socket empty
	pumpErr error                     // what ended the pump, if anything
	pumpCB  func(fd uintptr) bool     // pumpFn, bound once
	// waitRead calls its argument, waiting for readability each time it
	// returns false (the socket's RawConn.Read); nil: no pump.
	waitRead func(func(fd uintptr) bool) error

	pool  []*Cmd // reused between rounds; the round's are pool[:used]
	used  int
	reqs  []request
	parts [][]*Cmd
	bs    []Batch
	g     *Group
	toks  [][]byte // ascii tokenizer's output, reused
	// scratch holds numbers and binary headers on their way into r or w:
	// a local array would escape (bufio hands slices to interfaces).
	scratch [24]byte
	hdr     [headerLen]byte // a binary answer's header (extras may be in scratch)

	authed bool // binary SASL done, or no token needed
	quit   bool // close after this round's answers
	// counters of this round, added to the door's after it
	gets, sets, touches, hits, misses, flushes uint64
}

// request is one parsed request and how to answer it once its commands ran.
type request struct {
	binary  bool
	kind    reqKind
	first   int // its commands: pool[first:first+n]
	n       int
	noreply bool
	withCAS bool   // ascii gets/gats
	msg     string // local answers (errors, version)

	// binary
	opcode byte
	opaque uint32
}

type reqKind uint8

const (
	kindLocal  reqKind = iota // msg, nothing to run
	kindGet                   // get/gets/gat/gats (ascii: many keys)
	kindStore                 // set/add/replace/append/prepend/cas
	kindDelete                // delete
	kindIncr                  // incr/decr
	kindTouch                 // touch
	kindFlush                 // flush_all: one command per partition
	kindStats                 // stats
	kindQuit                  // binary quit: answer, then close
)

// errClose ends a connection after the round's answers (bad input whose
// rest cannot be skipped, quit).
var errClose = errors.New("close")

func newConn(d *Door, nc net.Conn) *conn {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c := &conn{d: d, nc: nc, sock: nc,
		parts: make([][]*Cmd, d.be.Partitions()), bs: make([]Batch, d.be.Partitions()), g: newGroup(),
		authed: d.cfg.AuthToken == ""}
	if r := newRawIO(nc); r != nil {
		c.sock, c.waitRead = r, r.rc.Read
	}
	c.readNow = func(p []byte) (int, error) { return sysRead(c.fd, p) }
	c.pumpCB = c.pumpFn
	c.r = bufio.NewReaderSize(boundedReader{c}, bufSize)
	c.w = bufio.NewWriterSize(c.sock, bufSize)
	return c
}

func (c *conn) serve() {
	for !c.quit {
		if c.waitRead != nil && c.r.Buffered() == 0 {
			c.drained, c.pumpErr, c.pumping = false, nil, true
			err := c.waitRead(c.pumpCB)
			c.pumping = false
			if err != nil || c.pumpErr != nil || c.quit {
				return
			}
			// An incomplete request is buffered: round() waits for its rest.
		}
		if err := c.round(0); err != nil {
			return
		}
	}
}

// cmd takes the next free Cmd of the pool, its results cleared.
func (c *conn) cmd() *Cmd {
	if c.used == len(c.pool) {
		c.pool = append(c.pool, &Cmd{Out: make([]byte, 512)})
	}
	m := c.pool[c.used]
	c.used++
	out, buf := m.Out, m.buf
	*m = Cmd{Out: out, buf: buf}
	return m
}

// keyed fills a command's key, hash and partition.
func (c *conn) keyed(m *Cmd, key []byte) {
	m.SetKey(key)
	m.Hash = kv.Hash(m.Key)
	m.Part = c.d.be.PartitionOf(m.Hash)
}

// round reads, runs and answers one round of requests; with limit > 0,
// of those in the first limit buffered bytes (the pump's).
func (c *conn) round(limit int) error {
	c.used, c.reqs = 0, c.reqs[:0]
	// Idle: wait for a first byte without a deadline (memcached clients
	// keep connections open; Close ends the wait). Then the rest of the
	// round must come within ReadTimeout (boundedReader).
	c.midRound, c.armedIn = false, false
	if c.r.Buffered() == 0 {
		if _, err := c.r.Peek(1); err != nil {
			return err
		}
	}
	c.midRound = true
	start := c.r.Buffered()
	var perr error
	for {
		b, err := c.r.Peek(1)
		if err != nil {
			perr = err
			break
		}
		if b[0] == binaryReq {
			perr = c.parseBinary()
		} else {
			perr = c.parseASCII()
		}
		if perr != nil || c.quit || c.r.Buffered() == 0 || c.used >= maxRoundCmds ||
			limit > 0 && start-c.r.Buffered() >= limit {
			break
		}
	}
	if len(c.reqs) == 0 {
		return perr
	}
	if err := c.run(); err != nil {
		return err
	}
	c.armWrite()
	for i := range c.reqs {
		if c.reqs[i].binary {
			c.answerBinary(&c.reqs[i])
		} else {
			c.answerASCII(&c.reqs[i])
		}
	}
	c.count()
	if err := c.w.Flush(); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.d.slowClients.Add(1)
		}
		return err
	}
	if perr != nil {
		if !errors.Is(perr, errClose) {
			return perr
		}
		return errClose
	}
	return nil
}

// run hands the round's commands to their partitions and waits for them.
func (c *conn) run() error {
	if c.used == 0 {
		return nil
	}
	for _, m := range c.pool[:c.used] {
		c.parts[m.Part] = append(c.parts[m.Part], m)
	}
	n := int32(0)
	for p := range c.parts {
		if len(c.parts[p]) > 0 {
			n++
		}
	}
	c.g.left.Store(n)
	var err error
	for p := range c.parts {
		if len(c.parts[p]) == 0 {
			continue
		}
		c.bs[p] = Batch{Cmds: c.parts[p], Group: c.g}
		if !c.d.be.Enqueue(p, &c.bs[p]) {
			err = errClose // stopping: the enqueued ones may still run
			c.g.Done()
		}
	}
	select {
	case <-c.g.done: // run already (a lent partition, door.go in package server)
		return c.endRun(err)
	default:
	}
	t := time.NewTimer(c.d.cfg.RunTimeout)
	defer t.Stop()
	select {
	case <-c.g.done:
	case <-c.d.be.Stopped():
		return errClose
	case <-t.C:
		c.d.timeout.Add(1)
		return errClose // the batches may still run: this Group is not reused
	}
	return c.endRun(err)
}

func (c *conn) endRun(err error) error {
	for p := range c.parts {
		clear(c.parts[p])
		c.parts[p] = c.parts[p][:0]
		c.bs[p] = Batch{}
	}
	return err
}

func (c *conn) count() {
	d := c.d
	if c.gets != 0 {
		d.cmdGet.Add(c.gets)
		d.getHits.Add(c.hits)
		d.getMisses.Add(c.misses)
	}
	if c.sets != 0 {
		d.cmdSet.Add(c.sets)
	}
	if c.touches != 0 {
		d.cmdTouch.Add(c.touches)
	}
	if c.flushes != 0 {
		d.cmdFlush.Add(c.flushes)
	}
	c.gets, c.sets, c.touches, c.hits, c.misses, c.flushes = 0, 0, 0, 0, 0, 0
}

// flushCmds adds one OpFlush per partition.
func (c *conn) flushCmds(delay uint32) (first, n int) {
	first = c.used
	for p := range c.d.be.Partitions() {
		m := c.cmd()
		m.Op, m.TTL, m.Part = OpFlush, delay, p
	}
	c.flushes++
	return first, c.used - first
}

// ttl converts a memcached exptime: 0 none, negative already expired, up
// to 30 days relative seconds, beyond that an absolute Unix time.
func (c *conn) ttl(exptime int64) (ttl uint32, expired bool) {
	switch {
	case exptime == 0:
		return 0, false
	case exptime < 0:
		return 0, true
	case exptime > 30*24*3600:
		now := int64(c.d.be.Now())
		if exptime <= now {
			return 0, true
		}
		exptime -= now
	}
	if exptime > 1<<32-1 {
		exptime = 1<<32 - 1
	}
	return uint32(exptime), false
}

func pid() int { return os.Getpid() }
