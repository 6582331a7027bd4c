package memcache

import (
	"sync/atomic"

	"github.com/jakiro-kv/jakiro/kv"
)

// Op is what a Cmd does on its key's partition.
type Op uint8

const (
	OpGet    Op = iota // GetItem (PeekItem if Peek) into Out
	OpStore            // Store (Mode, Flags, CAS), then Delete if Expired
	OpDelete           // Delete
	OpIncr             // Incr (Delta, Decr, Create, Initial)
	OpTouch            // Touch
	OpGat              // GetAndTouch into Out
	OpFlush            // Flush(TTL) of the whole partition (no key)
	OpScan             // a chunk of lru_crawler metadump lines from Cursor into Out (dump.go)
	OpLimit            // SetLimit(Num) of the whole partition (cache_memlimit); Num: the limit set
)

// Cmd is one single-key operation of a connection, run on its key's
// partition by that partition's goroutine (Exec). The connection fills the
// arguments, hands it over and reads the results only after the partition
// is done with it: the hand-over (Group) orders the accesses.
type Cmd struct {
	Op      Op
	Mode    kv.StoreMode
	Key     []byte
	Hash    uint64
	Value   []byte
	TTL     uint32
	Expired bool // the exptime was in the past: store (for the answer), then drop
	Flags   uint32
	CAS     uint64
	Delta   uint64
	Decr    bool
	Create  bool
	Initial uint64
	Peek    bool // OpGet: leave the item unmarked, neither fetched nor accessed (mg u, me)
	Part    int  // the partition (OpFlush: the one to flush)
	// The meta commands' (meta.go, metawrite.go, stale.go): MetaVerb is
	// the command's letter (ms and ma follow memcached's meta rules); N
	// (Vivify, VivifyTTL: mg and ma create a missing item, ms in append
	// mode its value), R (Recache, with HasRecache), I (Invalid), T where
	// it is not a touch (SetTTL: TTL), E (Version: the version the written
	// item takes, 0: its own), md's x (Tombstone). TLast: T comes after N
	// (on an item N created, T's TTL is the one left); RAfterT: R compares
	// the TTL T set.
	MetaVerb   byte
	Vivify     bool
	VivifyTTL  uint32
	HasRecache bool
	Recache    uint32
	Invalid    bool
	SetTTL     bool
	TLast      bool
	RAfterT    bool
	Tombstone  bool
	Version    uint64
	CAS0       bool // ms, md: C0, which no item's cas matches (CAS 0 is none)
	Win        bool // result: mg handed out the item's win token (W)
	Created    bool // result: N created the item

	// Results.
	Status kv.Status
	Out    []byte // value buffer (OpGet, OpGat): the value is Out[:N]
	N      int    // value length; with StatusTooLarge the length needed
	Meta   kv.Meta
	Num    uint64 // OpIncr's result
	// OpScan: where the partition's scan goes on (argument and result),
	// and whether it reached the log's end.
	Cursor   uint64
	ScanDone bool
	// OpScan's arguments: cachedump's lines (else metadump's), at most
	// ScanLeft of them (0: no limit); Num is how many it listed.
	ScanCache bool
	ScanLeft  uint64

	keyBuf [kv.MaxKeyLen]byte
	buf    []byte // the connection reads values (binary: bodies) here
	out0   []byte // Out as the pool made it (outBase bytes): what a grown Out returns to
	lim    *limiter
	head   bool // the first command of its run: it may always grow (progress)
	done   bool // Exec ran it (false after a run: deferred to the next one)
}

// limiter is a connection's account of the bytes its commands' buffers
// hold beyond their base (grown Outs, value bodies), shared by the
// partitions that run its commands. A get whose value would take held
// past budget is deferred with every later command of its partition in
// that run (the connection answers what ran, frees it, and runs the rest:
// per-key order holds because a partition always runs a prefix of its
// batch); the run's first command grows regardless, so every run makes
// progress.
type limiter struct {
	held    atomic.Int64
	budget  int64
	stopped []atomic.Bool // per partition: the rest of its batch is deferred
	peak    *atomic.Int64 // the door's highest held (tests, stats)
	all     *atomic.Int64 // the door's held, all connections (stats)
	pool    *bufPool      // the door's
}

// take accounts n more bytes held; false (nothing taken) if that would
// pass the budget and force is not set.
func (l *limiter) take(n int64, force bool) bool {
	v := l.held.Add(n)
	if v > l.budget && !force && n > 0 {
		l.held.Add(-n)
		return false
	}
	for p := l.peak.Load(); v > p && !l.peak.CompareAndSwap(p, v); p = l.peak.Load() {
	}
	l.all.Add(n)
	return true
}

// body returns n bytes of the command's buffer, grown if need be (held
// accounts for it: the connection ends its round once past the budget).
func (c *Cmd) body(n int) []byte {
	if cap(c.buf) < n {
		old := c.buf
		if c.lim == nil {
			c.buf = make([]byte, n)
		} else {
			c.buf = c.lim.pool.get(n)
			c.lim.take(int64(cap(c.buf)-cap(old)), true)
			c.lim.pool.put(old)
		}
	}
	return c.buf[:n]
}

// grow makes Out hold c.N bytes if the connection's budget allows (or
// the command heads its run).
func (c *Cmd) grow() bool {
	if c.lim == nil {
		c.Out = make([]byte, c.N)
		return true
	}
	_, size := sizeClass(c.N)
	extra := int64(size)
	grown := cap(c.Out) > cap(c.out0)
	if grown {
		extra -= int64(cap(c.Out)) // a grown Out is replaced
	}
	if !c.lim.take(extra, c.head) {
		return false
	}
	if grown {
		c.lim.pool.put(c.Out)
	}
	c.Out = c.lim.pool.get(c.N)
	return true
}

// release returns Out and the body buffer to their base once answered, if
// grown past keep bytes.
func (c *Cmd) release(keep int) {
	if c.lim == nil {
		return
	}
	var n int
	if cap(c.Out) > keep && cap(c.Out) > cap(c.out0) {
		n += cap(c.Out)
		c.lim.pool.put(c.Out)
		c.Out = c.out0
	}
	if cap(c.buf) > keep {
		n += cap(c.buf)
		c.lim.pool.put(c.buf)
		c.buf, c.Value = nil, nil
	}
	if n > 0 {
		c.lim.take(-int64(n), true)
	}
}

// SetKey copies key into the Cmd (the connection's read buffer moves on).
func (c *Cmd) SetKey(key []byte) { c.Key = c.keyBuf[:copy(c.keyBuf[:], key)] }

// Exec runs the command on p, which must be its key's partition, from p's
// owner goroutine. It allocates only to grow Out for a value longer than
// it (within the connection's budget). A command whose partition
// deferred an earlier one of the same run is not run (done stays false).
func (c *Cmd) Exec(p *kv.Partition) {
	if c.lim != nil && c.lim.stopped[c.Part].Load() {
		return
	}
	c.done = true
	switch c.Op {
	case OpGet:
		c.get(p)
		if c.Status == kv.StatusTooLarge {
			// A value longer than Out: it grows if the connection's
			// budget allows, and the get runs again in its place;
			// otherwise the get waits for the connection's next run.
			// (A read that does not fit marks nothing.)
			if !c.grow() {
				c.postpone()
				return
			}
			c.get(p)
		}
		c.recache(p)
	case OpGat:
		if c.Expired {
			c.get(p)
			if c.Status == kv.StatusTooLarge {
				if !c.grow() {
					c.postpone()
					return
				}
				c.get(p)
			}
			if c.Status == kv.StatusOK {
				p.Delete(c.Hash, c.Key)
			}
			return
		}
		c.getTouch(p)
		if c.Status == kv.StatusTooLarge { // as OpGet: a too long value is not touched yet
			if !c.grow() {
				c.postpone()
				return
			}
			c.getTouch(p)
		}
		c.recache(p)
	case OpStore:
		if c.MetaVerb == 's' {
			c.metaStore(p)
			return
		}
		c.store(p, c.CAS)
	case OpDelete:
		c.delete(p)
	case OpIncr:
		if c.MetaVerb == 'a' {
			c.metaArith(p)
			return
		}
		c.Num, c.Meta.Version, c.Status = p.Incr(c.Hash, c.Key, c.Delta, c.Decr, c.Create, c.Initial, c.TTL, c.Flags)
	case OpTouch:
		if c.Expired {
			c.Status = p.Delete(c.Hash, c.Key)
			return
		}
		c.Meta, c.Status = p.Touch(c.Hash, c.Key, c.TTL)
	case OpFlush:
		p.Flush(c.TTL)
		c.Status = kv.StatusOK
	case OpScan:
		c.scan(p)
	case OpLimit:
		c.Num, c.Status = p.SetLimit(c.Num), kv.StatusOK
	}
}

// get is OpGet's read: GetItem, or PeekItem if Peek.
func (c *Cmd) get(p *kv.Partition) {
	if c.Peek {
		c.N, c.Meta, c.Status = p.PeekItem(c.Hash, c.Key, c.Out)
		return
	}
	c.N, c.Meta, c.Status = p.GetItem(c.Hash, c.Key, c.Out)
}

// getTouch is OpGat's read: GetAndTouch, or with Peek a read and a
// Retime, which leave the item unmarked.
func (c *Cmd) getTouch(p *kv.Partition) {
	if !c.Peek {
		c.N, c.Meta, c.Status = p.GetAndTouch(c.Hash, c.Key, c.Out, c.TTL)
		return
	}
	c.N, c.Meta, c.Status = p.PeekItem(c.Hash, c.Key, c.Out)
	if c.Status == kv.StatusOK {
		p.Retime(c.Hash, c.Key, c.TTL)
	}
}

// store is OpStore's write with compare-and-swap cas.
func (c *Cmd) store(p *kv.Partition, cas uint64) {
	c.Meta.Version, c.Status = p.Store(c.Hash, c.Key, c.Value, c.TTL, c.Flags, c.Mode, cas)
	switch {
	case c.Expired && c.Status == kv.StatusOK:
		p.Delete(c.Hash, c.Key)
	case c.Mode == kv.StoreSet && cas == 0 && (c.Status == kv.StatusTooLarge || c.Status == kv.StatusNoMemory):
		p.Delete(c.Hash, c.Key) // a failed set leaves no older value, as memcached
	case (c.Mode == kv.StoreAppend || c.Mode == kv.StorePrepend) && c.Status == kv.StatusTooLarge:
		// The value fit (the connection checked), the item it would
		// make does not: memcached answers that it was not stored.
		c.Status = kv.StatusNotStored
	}
}

// postpone leaves the command, and the rest of its partition's batch, to the
// connection's next run.
func (c *Cmd) postpone() {
	c.done = false
	c.lim.stopped[c.Part].Store(true)
}

// Batch is the commands of one connection for one partition, handed over
// together.
type Batch struct {
	Cmds  []*Cmd
	Group *Group
}

// Group counts the batches of a connection's round that a partition has
// not finished; the last one done wakes the connection.
type Group struct {
	left atomic.Int32
	done chan struct{}
}

func newGroup() *Group { return &Group{done: make(chan struct{}, 1)} }

// Done is called by a partition after running a batch of the group.
func (g *Group) Done() {
	if g.left.Add(-1) == 0 {
		g.done <- struct{}{}
	}
}
