package memcache

import (
	"sync/atomic"

	"github.com/jakiro-kv/jakiro/kv"
)

// Op is what a Cmd does on its key's partition.
type Op uint8

const (
	OpGet    Op = iota // GetItem into Out
	OpStore            // Store (Mode, Flags, CAS), then Delete if Expired
	OpDelete           // Delete
	OpIncr             // Incr (Delta, Decr, Create, Initial)
	OpTouch            // Touch
	OpGat              // GetAndTouch into Out
	OpFlush            // Flush(TTL) of the whole partition (no key)
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
	Part    int // the partition (OpFlush: the one to flush)

	// Results.
	Status kv.Status
	Out    []byte // value buffer (OpGet, OpGat): the value is Out[:N]
	N      int    // value length; with StatusTooLarge the length needed
	Meta   kv.Meta
	Num    uint64 // OpIncr's result

	keyBuf [kv.MaxKeyLen]byte
	buf    []byte // the connection reads values (binary: bodies) here
}

// body returns n bytes of the command's buffer, grown if need be.
func (c *Cmd) body(n int) []byte {
	if cap(c.buf) < n {
		c.buf = make([]byte, n)
	}
	return c.buf[:n]
}

// SetKey copies key into the Cmd (the connection's read buffer moves on).
func (c *Cmd) SetKey(key []byte) { c.Key = c.keyBuf[:copy(c.keyBuf[:], key)] }

// Exec runs the command on p, which must be its key's partition, from p's
// owner goroutine. It does not allocate.
func (c *Cmd) Exec(p *kv.Partition) {
	switch c.Op {
	case OpGet:
		c.N, c.Meta, c.Status = p.GetItem(c.Hash, c.Key, c.Out)
		if c.Status == kv.StatusTooLarge {
			// The first value this long on this connection: the buffer
			// grows (up to the store's MaxValue, once) and the get runs
			// again, in its place among the connection's commands.
			c.Out = make([]byte, c.N)
			c.N, c.Meta, c.Status = p.GetItem(c.Hash, c.Key, c.Out)
		}
	case OpGat:

		if c.Expired {
			c.N, c.Meta, c.Status = p.GetItem(c.Hash, c.Key, c.Out)
			if c.Status == kv.StatusOK {
				p.Delete(c.Hash, c.Key)
			}
			return
		}
		c.N, c.Meta, c.Status = p.GetAndTouch(c.Hash, c.Key, c.Out, c.TTL)
		if c.Status == kv.StatusTooLarge { // as OpGet: a too long value is not touched yet
			c.Out = make([]byte, c.N)
			c.N, c.Meta, c.Status = p.GetAndTouch(c.Hash, c.Key, c.Out, c.TTL)
		}
	case OpStore:
		c.Meta.Version, c.Status = p.Store(c.Hash, c.Key, c.Value, c.TTL, c.Flags, c.Mode, c.CAS)
		if c.Expired && c.Status == kv.StatusOK {
			p.Delete(c.Hash, c.Key)
		}
	case OpDelete:
		c.Status = p.Delete(c.Hash, c.Key)
	case OpIncr:
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
	}
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
