package client

import (
	"context"

	"github.com/jakiro-kv/jakiro/rfp"
)

// Batch is a list of operations run pipelined by Client.Run: requests go
// out as ring slots free up on every partition, and results are fetched
// as they become ready. Reuse a Batch with Reset to avoid allocations.
type Batch struct {
	ops      []batchOp
	inflight []int // indices submitted and not done, during Run
}

type batchOp struct {
	p     int // partition, computed once per Run
	op    rfp.Op
	key   []byte
	value []byte
	ttl   uint32
	c     call
	err   error
}

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() { b.ops = b.ops[:0] }

// Len is the number of operations.
func (b *Batch) Len() int { return len(b.ops) }

func (b *Batch) add(op rfp.Op, key, value []byte, ttl uint32) int {
	if len(b.ops) < cap(b.ops) {
		b.ops = b.ops[:len(b.ops)+1]
		o := &b.ops[len(b.ops)-1]
		o.op, o.key, o.value, o.ttl, o.err = op, key, value, ttl, nil
		o.c.done = false
	} else {
		b.ops = append(b.ops, batchOp{op: op, key: key, value: value, ttl: ttl})
	}
	return len(b.ops) - 1
}

// Get adds a GET and returns its index. key must stay unchanged until Run returns.
func (b *Batch) Get(key []byte) int { return b.add(rfp.OpGet, key, nil, 0) }

// Put adds a PUT and returns its index.
func (b *Batch) Put(key, value []byte, ttlSeconds uint32) int {
	return b.add(rfp.OpPut, key, value, ttlSeconds)
}

// Delete adds a DELETE and returns its index.
func (b *Batch) Delete(key []byte) int { return b.add(rfp.OpDelete, key, nil, 0) }

// Result is operation i's outcome after Run: the value (for a GET; valid
// until the batch is reused) and its error.
func (b *Batch) Result(i int) ([]byte, error) {
	o := &b.ops[i]
	return o.c.val, o.err
}

// Run executes the batch pipelined. It returns the first connection or
// context error; per-operation outcomes are in Result.
func (c *Client) Run(ctx context.Context, b *Batch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	next, done := 0, 0
	var w waitState
	defer w.done()
	for i := range b.ops {
		o := &b.ops[i]
		if o.err = c.check(o.key, o.value); o.err != nil {
			o.c.done = true
			done++
			continue
		}
		o.p = c.partition(o.key)
	}
	b.inflight = b.inflight[:0]
	for done < len(b.ops) {
		for next < len(b.ops) {
			o := &b.ops[next]
			if o.c.done { // failed validation
				next++
				continue
			}
			if !c.in.Free(o.p) {
				break
			}
			slot, err := c.in.Submit(o.p, o.op, o.key, o.value, o.ttl)
			if err != nil {
				return err
			}
			c.slotCall[slot] = &o.c
			b.inflight = append(b.inflight, next)
			next++
		}
		if err := c.progressLocked(); err != nil {
			return err
		}
		// Only what is in flight can have finished: scan that, not the batch.
		kept := b.inflight[:0]
		for _, i := range b.inflight {
			if b.ops[i].c.done {
				done++
			} else {
				kept = append(kept, i)
			}
		}
		b.inflight = kept
		if done == len(b.ops) {
			break
		}
		if err := c.wait(ctx, &w); err != nil {
			for _, i := range b.inflight {
				for s, x := range c.slotCall {
					if x == &b.ops[i].c {
						c.slotCall[s] = nil
					}
				}
			}
			return err
		}
	}
	for i := range b.ops {
		if o := &b.ops[i]; o.err == nil {
			o.err = statusErr(o.c.st)
		}
	}
	return nil
}
