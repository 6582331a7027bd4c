package fabrictest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
)

// testBatch posts mixed READ/WRITE batches, several before polling, and
// checks every completion arrives in posting order with its ID and kind.
func testBatch(t *testing.T, newAddr func(*testing.T) string) {
	const slot, slots = 64, 32
	ln := listen(t, newAddr, fabric.Options{})
	p := connect(t, ln, fabric.Options{}, slot*slots, slot*slots)
	tm := p.AReg.Bytes()
	for i := 0; i < slots; i += 2 { // odd slots: what the READs fetch
		copy(tm[(i+1)*slot:], pattern(uint64(500+i+1), slot))
	}
	var ops []fabric.Op
	for i := 0; i < slots; i++ {
		off := i * slot
		if i%2 == 0 {
			copy(p.DReg.Bytes()[off:], pattern(uint64(500+i), slot))
			ops = append(ops, write(p.DReg, off, p.ToA, uint64(off), slot, uint64(1e6+7*i)))
		} else {
			ops = append(ops, read(p.DReg, off, p.ToA, uint64(off), slot, uint64(1e6+7*i)))
		}
	}
	t.Run("OneBatch", func(t *testing.T) {
		cs, err := do(p.D, ops...)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkCompletions(ops, cs, nil); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < slots; i++ {
			want := pattern(uint64(500+i), slot)
			if err := equal(fmt.Sprintf("slot %d at initiator", i), p.DReg.Bytes()[i*slot:(i+1)*slot], want); err != nil {
				t.Fatal(err)
			}
			if err := eventually(tm, i*slot, want); err != nil {
				t.Fatalf("slot %d at target: %v", i, err)
			}
		}
	})
	t.Run("BatchesBeforePoll", func(t *testing.T) {
		// Four batches of eight posted back to back, then one reap.
		for b := 0; b < 4; b++ {
			if err := p.D.Post(ops[b*8 : (b+1)*8]); err != nil {
				t.Fatalf("Post batch %d: %v", b, err)
			}
		}
		cs, err := reap(p.D, len(ops))
		if err != nil {
			t.Fatal(err)
		}
		if err := checkCompletions(ops, cs, nil); err != nil {
			t.Fatal(err)
		}
		var none [1]fabric.Completion
		if n, err := p.D.Poll(none[:]); n != 0 || err != nil {
			t.Fatalf("Poll after all completions: %d, %v; want 0, nil", n, err)
		}
	})
	t.Run("EmptyPost", func(t *testing.T) {
		if err := p.D.Post(nil); err != nil {
			t.Fatalf("Post(nil): %v", err)
		}
	})
}

// testQueueDepth checks Options.QueueDepth bounds posted-but-unpolled ops
// and that a rejected batch posts nothing.
func testQueueDepth(t *testing.T, newAddr func(*testing.T) string) {
	const depth = 8
	o := fabric.Options{QueueDepth: depth}
	ln := listen(t, newAddr, o)
	p := connect(t, ln, o, 4096, 4096)
	mk := func(base uint64, n int) []fabric.Op {
		ops := make([]fabric.Op, n)
		for i := range ops {
			ops[i] = read(p.DReg, 8*i, p.ToA, uint64(8*i), 8, base+uint64(i))
		}
		return ops
	}
	if err := p.D.Post(mk(100, depth+1)); !errors.Is(err, fabric.ErrQueueFull) {
		t.Fatalf("Post of %d ops at depth %d: %v, want ErrQueueFull", depth+1, depth, err)
	}
	full := mk(200, depth)
	if err := p.D.Post(full); err != nil {
		t.Fatalf("Post of %d ops at depth %d: %v", depth, depth, err)
	}
	if err := p.D.Post(mk(300, 1)); !errors.Is(err, fabric.ErrQueueFull) {
		t.Fatalf("Post beyond depth with nothing polled: %v, want ErrQueueFull", err)
	}
	cs, err := reap(p.D, depth)
	if err != nil {
		t.Fatal(err)
	}
	// The first completion belongs to the accepted batch: the rejected
	// ones posted nothing.
	if err := checkCompletions(full, cs, nil); err != nil {
		t.Fatal(err)
	}
	if err := execOK(p.D, mk(400, depth)...); err != nil {
		t.Fatalf("after reaping, a full queue again: %v", err)
	}
}
