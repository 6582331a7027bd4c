package client

import "github.com/jakiro-kv/jakiro/rfp"

// Batch is a list of operations run pipelined by Client.Run: requests go
// out as the rings have room on every partition, and results are fetched
// as they become ready. With many servers the batch is split per server
// and the parts run in parallel; results stay in the caller's order.
// Reuse a Batch with Reset to avoid allocations.
type Batch struct {
	ops   []batchOp
	calls []*call // the calls queued, during Run

	// A Run over many servers fills one part per server (reused across
	// runs); at[i] is where operation i went, and split says Result
	// reads the parts.
	parts []Batch
	at    []opRef
	errs  []error // per part, during a split Run
	split bool
}

// opRef places an operation in a split batch: part (server) and index.
type opRef struct{ part, idx int32 }

type batchOp struct {
	p     int // partition, computed once per Run
	op    rfp.Op
	key   []byte
	value []byte
	ttl   uint32
	c     call
	err   error
	// refused: an argument the batch refuses without sending
	// (batch_commands.go); req: a command's arguments and value, its
	// memory kept across Reset.
	refused error
	req     []byte
}

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() { b.ops, b.split = b.ops[:0], false }

// Len is the number of operations.
func (b *Batch) Len() int { return len(b.ops) }

func (b *Batch) add(op rfp.Op, key, value []byte, ttl uint32) int {
	if len(b.ops) < cap(b.ops) {
		b.ops = b.ops[:len(b.ops)+1]
		o := &b.ops[len(b.ops)-1]
		o.op, o.key, o.value, o.ttl, o.err, o.refused = op, key, value, ttl, nil, nil
		o.c.state.Store(callQueued)
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
	o := b.opAt(i)
	return o.c.val, o.err
}

// opAt is operation i where its outcome is: in its server's part after a
// split Run.
func (b *Batch) opAt(i int) *batchOp {
	if b.split {
		r := b.at[i]
		return &b.parts[r.part].ops[r.idx]
	}
	return &b.ops[i]
}

// settle gives every operation an outcome after its server failed with
// err: those the server finished keep their status, the rest get err.
func (b *Batch) settle(err error) {
	for i := range b.ops {
		o := &b.ops[i]
		switch {
		case o.err != nil: // failed validation
		case o.c.state.Load() == callDone && o.c.err == nil:
			o.err = statusErr(o.c.st)
		default:
			o.err = err
			o.c.val = o.c.val[:0]
		}
	}
}

// detach leaves the batch's operations to a driver that may still write
// into them (their caller gave up): the batch takes fresh memory.
func (b *Batch) detach() {
	ops := make([]batchOp, len(b.ops), cap(b.ops))
	for i := range b.ops {
		o := &b.ops[i]
		ops[i].p, ops[i].op, ops[i].key, ops[i].value, ops[i].ttl, ops[i].err, ops[i].refused = o.p, o.op, o.key, o.value, o.ttl, o.err, o.refused
		if o.c.state.Load() == callDone {
			ops[i].c.st, ops[i].c.err, ops[i].c.val = o.c.st, o.c.err, append([]byte(nil), o.c.val...)
			ops[i].c.state.Store(callDone)
		}
	}
	b.ops, b.calls = ops, nil
}
