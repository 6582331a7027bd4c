package memcache

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
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
	idleAt    time.Time // when the idle deadline was last set

	// The pump (pump.go): reads that never wait, inside RawConn.Read.
	pumping bool                      // reads go to readNow
	readNow func([]byte) (int, error) // the socket's non-blocking read
	fd      uintptr                   // the socket, while pumping
	drained bool                      // the last read left the socket empty
	pumpErr error                     // what ended the pump, if anything
	pumpCB  func(fd uintptr) bool     // pumpFn, bound once
	waited  bool                      // pumpFn ran before in this wait
	// spinEpoch: the door's spin epoch this connection may spin in.
	spinEpoch uint64
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

	lim limiter // what the commands' buffers hold (cmd.go)
	// meta commands' return flags of this round, and key (de)coding room
	metaBuf []byte
	keyDec  [kv.MaxKeyLen + 8]byte
	keyEnc  [(kv.MaxKeyLen + 2) / 3 * 4]byte
	// The answers written so far in this round: requests before ans, and
	// of request ans (a multi-key get) its first ansCmd commands.
	ans, ansCmd int
	// A get whose keys go on past this round (maxRoundCmds): its next
	// keys start the next round (ascii.go).
	getMore bool
	getCAS  bool
	getGat  bool
	getTTL  uint32
	getExp  bool
	// A metadump in progress (dump.go): a chunk a round.
	dumpMore  bool
	dumpPart  int
	dumpAt    uint64
	dumpCache bool   // stats cachedump's lines
	dumpLeft  uint64 // items still to list (a limit), 0: no limit

	abandoned bool // a run was left to the partitions (timeout, stop)
	authed    bool // binary SASL done, or no token needed
	authFails int  // failed SASL attempts on this connection
	authSleep bool // this round answers a failed SASL attempt: late
	quit      bool // close after this round's answers
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
	withCAS bool // ascii gets/gats
	more    bool // ascii get: its keys go on in the next round (no END yet)
	args    int  // stats: its arguments

	// meta commands (meta.go): the verb's letter, q, v and b, and the
	// return flags asked for, conn.metaBuf[specFrom:specTo]
	meta              byte
	quiet, value, b64 bool
	specFrom, specTo  int
	msg               string // local answers (errors, version)

	// binary
	opcode byte
	opaque uint32
}

type reqKind uint8

const (
	kindLocal    reqKind = iota // msg, nothing to run
	kindGet                     // get/gets/gat/gats (ascii: many keys)
	kindStore                   // set/add/replace/append/prepend/cas
	kindDelete                  // delete
	kindIncr                    // incr/decr
	kindTouch                   // touch
	kindFlush                   // flush_all: one command per partition
	kindStats                   // stats
	kindQuit                    // binary quit: answer, then close
	kindTooLarge                // a set over the maximum: its key deleted, too large answered
	kindMeta                    // mg, ms, md, ma, me (meta.go)
	kindDump                    // a chunk of lru_crawler metadump (dump.go)
	kindReset                   // stats reset, when its turn comes (admin.go)
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
		d.spin.add(r.rc)
	}
	c.readNow = func(p []byte) (int, error) { return sysRead(c.fd, p) }
	c.pumpCB = c.pumpFn
	c.lim.budget = RoundBytes
	c.lim.stopped = make([]atomic.Bool, d.be.Partitions())
	c.lim.peak, c.lim.all = &d.peakHeld, &d.held
	c.lim.pool = &d.bufs
	// The buffers come from the door's pools and go back at close (end):
	// a connection that opens and closes costs no 128 KiB of fresh memory.
	c.r = d.readers.Get().(*bufio.Reader)
	c.r.Reset(boundedReader{c})
	c.w = d.writers.Get().(*bufio.Writer)
	c.w.Reset(c.sock)
	return c
}

// end gives the connection's buffers back to the door. Nothing of the
// connection runs after it.
func (c *conn) end() {
	if !c.abandoned { // else partitions may still write into its commands
		for _, m := range c.pool {
			m.release(0)
		}
	}
	c.d.held.Add(-c.lim.held.Load())
	c.r.Reset(nil)
	c.w.Reset(nil)
	c.d.readers.Put(c.r)
	c.d.writers.Put(c.w)
	c.r, c.w = nil, nil
}

func (c *conn) serve() {
	for !c.quit {
		// A get line under way waits for its rest within ReadTimeout
		// (round), not in the pump, where waits are idle ones.
		if c.waitRead != nil && c.r.Buffered() == 0 && !c.getMore {
			c.drained, c.pumpErr, c.pumping, c.waited = false, nil, true, false
			err := c.waitRead(c.pumpCB)
			c.pumping = false
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.d.idleKicks.Add(1)
			}
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
		out := make([]byte, outBase)
		c.pool = append(c.pool, &Cmd{Out: out, out0: out, lim: &c.lim})
	}
	m := c.pool[c.used]
	c.used++
	out, buf, out0 := m.Out, m.buf, m.out0
	*m = Cmd{Out: out, buf: buf, out0: out0, lim: &c.lim}
	return m
}

// keyed fills a command's key, hash and partition.
func (c *conn) keyed(m *Cmd, key []byte) {
	m.SetKey(key)
	m.Hash = kv.Hash(m.Key)
	m.Part = c.d.be.PartitionOf(m.Hash)
}

// round reads, runs and answers one round of requests; with limit > 0,
// of those in the first limit buffered bytes (the pump's). A round holds
// at most maxRoundCmds commands and, past the first request, stops
// reading once its buffers hold RoundBytes: a client's pipeline or long
// get line is read a round at a time, each round's answers written before
// the next is read, so a client that does not read its answers is not
// read either.
func (c *conn) round(limit int) error {
	c.used, c.reqs, c.metaBuf = 0, c.reqs[:0], c.metaBuf[:0]
	// Idle: wait for a first byte without a deadline (memcached clients
	// keep connections open; Close or IdleTimeout ends the wait). Then
	// the rest of the round must come within ReadTimeout (boundedReader).
	c.midRound, c.armedIn = false, false
	if !c.getMore && !c.dumpMore && c.r.Buffered() == 0 {
		if _, err := c.r.Peek(1); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				c.d.idleKicks.Add(1)
			}
			return err
		}
	}
	c.midRound = true
	start := c.r.Buffered()
	var perr error
	for {
		if c.getMore {
			perr = c.getKeys(false)
		} else if c.dumpMore {
			perr = c.dumpNext()
		} else {
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
		}
		if perr != nil || c.quit || c.getMore || c.dumpMore || c.r.Buffered() == 0 || c.used >= maxRoundCmds || len(c.reqs) >= maxRoundCmds ||
			c.lim.held.Load() > c.lim.budget || limit > 0 && start-c.r.Buffered() >= limit {
			break
		}
	}
	if len(c.reqs) == 0 {
		return perr
	}
	c.ans, c.ansCmd = 0, 0
	for {
		if err := c.run(); err != nil {
			return err
		}
		if c.authSleep {
			c.authDelay()
		}
		c.armWrite()
		if c.answer() {
			break
		}
		// Commands were deferred for the budget: those answered gave
		// their buffers back; run the rest.
	}
	c.count()
	for _, m := range c.pool[:c.used] {
		m.release(keepOut)
	}
	if c.lim.held.Load() > c.lim.budget/2 {
		for _, m := range c.pool {
			m.release(0)
		}
	}
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

// answer writes the answers of the requests whose commands all ran, in
// order, from where the last call stopped (a multi-key get: up to its
// first command not run), freeing the grown buffers of those answered;
// true once every request of the round is answered.
func (c *conn) answer() bool {
	for ; c.ans < len(c.reqs); c.ans, c.ansCmd = c.ans+1, 0 {
		q := &c.reqs[c.ans]
		if q.kind == kindGet && !q.binary {
			for ; c.ansCmd < q.n; c.ansCmd++ {
				m := c.pool[q.first+c.ansCmd]
				if !m.done {
					return false
				}
				c.valueASCII(q, m)
				m.release(keepOut)
			}
			if !q.more {
				c.w.WriteString("END\r\n")
			}
			continue
		}
		for _, m := range c.pool[q.first : q.first+q.n] {
			if !m.done {
				return false
			}
		}
		if q.binary {
			c.answerBinary(q)
		} else {
			c.answerASCII(q)
		}
		for _, m := range c.pool[q.first : q.first+q.n] {
			m.release(keepOut)
		}
	}
	return true
}

// run hands the round's commands not run yet to their partitions and
// waits for them. The first of them heads the run: it always runs.
func (c *conn) run() error {
	head := true
	for _, m := range c.pool[:c.used] {
		if m.done {
			continue
		}
		m.head, head = head, false
		c.parts[m.Part] = append(c.parts[m.Part], m)
	}
	if head {
		return nil // nothing to run
	}
	n := int32(0)
	for p := range c.parts {
		c.lim.stopped[p].Store(false)
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
		c.abandoned = true
		return errClose
	case <-t.C:
		c.d.timeout.Add(1)
		c.abandoned = true
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

// authDelay holds the answers of a round with a failed SASL attempt.
func (c *conn) authDelay() {
	c.authSleep = false
	t := time.NewTimer(authDelay)
	select {
	case <-t.C:
	case <-c.d.stop:
	}
	t.Stop()
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
