package fabrictest

import (
	"errors"
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
)

// testRemoteAccess checks that ops reaching outside the remote region, or
// naming a key not granted on this connection, complete with
// ErrRemoteAccess and change nothing. Each case uses a fresh connection.
func testRemoteAccess(t *testing.T, newAddr func(*testing.T) string) {
	const size = 4096
	ln := listen(t, newAddr, fabric.Options{})
	bad := func(t *testing.T, p *Pair, op fabric.Op) {
		t.Helper()
		w := pattern(op.ID, op.Len)
		copy(p.DReg.Bytes()[op.LocalOff:], w)
		cs, err := do(p.D, op)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkCompletions([]fabric.Op{op}, cs, fabric.ErrRemoteAccess); err != nil {
			t.Fatal(err)
		}
	}
	untouched := func(t *testing.T, r *fabric.Region) {
		t.Helper()
		for i, b := range r.Bytes() {
			if b != 0 {
				t.Fatalf("rejected op changed target byte %d to %#x", i, b)
			}
		}
	}
	t.Run("OffsetAtEnd", func(t *testing.T) {
		p := connect(t, ln, fabric.Options{}, size, size)
		bad(t, p, read(p.DReg, 0, p.ToA, size, 1, 1))
	})
	t.Run("Straddle", func(t *testing.T) {
		p := connect(t, ln, fabric.Options{}, size, size)
		bad(t, p, write(p.DReg, 0, p.ToA, size-4, 8, 2))
		untouched(t, p.AReg)
	})
	t.Run("Overflow", func(t *testing.T) {
		p := connect(t, ln, fabric.Options{}, size, size)
		bad(t, p, read(p.DReg, 0, p.ToA, ^uint64(0)-2, 8, 3))
	})
	t.Run("BelowStart", func(t *testing.T) {
		p := connect(t, ln, fabric.Options{}, size, size)
		d := p.ToA
		d.Addr -= 8 // reaches 8 bytes before the region
		bad(t, p, write(p.DReg, 0, d, 0, 16, 8))
		untouched(t, p.AReg)
	})
	t.Run("SubBeyond", func(t *testing.T) {
		p := connect(t, ln, fabric.Options{}, size, size)
		bad(t, p, write(p.DReg, 0, p.ToA.Sub(size-8, 64), 0, 64, 4))
		untouched(t, p.AReg)
	})
	t.Run("BadKey", func(t *testing.T) {
		p := connect(t, ln, fabric.Options{}, size, size)
		d := p.ToA
		d.Key ^= 0x80000000
		bad(t, p, write(p.DReg, 0, d, 0, 16, 5))
		untouched(t, p.AReg)
	})
	t.Run("ForeignKey", func(t *testing.T) {
		// A Desc granted on one connection is worthless on another, even
		// to the same listener from the same process.
		owner := connect(t, ln, fabric.Options{}, size, size)
		other := connect(t, ln, fabric.Options{}, size, size)
		bad(t, other, write(other.DReg, 0, owner.ToA, 0, 64, 6))
		untouched(t, owner.AReg)
		other2 := connect(t, ln, fabric.Options{}, size, size)
		bad(t, other2, read(other2.DReg, 0, owner.ToA, 0, 64, 7))
		// The owner's own access still works.
		if err := execOK(owner.D, read(owner.DReg, 0, owner.ToA, 0, 64, 8)); err != nil {
			t.Fatalf("owner READ after foreign attempts: %v", err)
		}
	})
}

// testLocalAccess checks that Post rejects ops whose local side is out of
// bounds, closed or of another connection with ErrLocalAccess, and posts
// nothing of such a batch.
func testLocalAccess(t *testing.T, newAddr func(*testing.T) string) {
	const size = 4096
	ln := listen(t, newAddr, fabric.Options{})
	p := connect(t, ln, fabric.Options{}, size, size)
	other := connect(t, ln, fabric.Options{}, size, size)
	closed, err := p.D.Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	cases := []struct {
		name string
		op   fabric.Op
	}{
		{"PastEnd", read(p.DReg, size-4, p.ToA, 0, 8, 1)},
		{"OffsetAtEnd", write(p.DReg, size, p.ToA, 0, 1, 1)},
		{"NegativeOffset", read(p.DReg, -1, p.ToA, 0, 8, 1)},
		{"NegativeLen", read(p.DReg, 0, p.ToA, 0, -8, 1)},
		{"NilRegion", read(nil, 0, p.ToA, 0, 8, 1)},
		{"ClosedRegion", read(closed, 0, p.ToA, 0, 8, 1)},
		{"OtherConnRegion", read(other.DReg, 0, p.ToA, 0, 8, 1)},
	}
	id := uint64(100)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			good := read(p.DReg, 0, p.ToA, 0, 8, id)
			c.op.ID = id + 1
			id += 3
			if err := p.D.Post([]fabric.Op{c.op}); !errors.Is(err, fabric.ErrLocalAccess) {
				t.Fatalf("Post alone: %v, want ErrLocalAccess", err)
			}
			if err := p.D.Post([]fabric.Op{good, c.op}); !errors.Is(err, fabric.ErrLocalAccess) {
				t.Fatalf("Post after a good op: %v, want ErrLocalAccess", err)
			}
			// Nothing of the batch was posted: the next completion is the
			// next op's.
			next := read(p.DReg, 0, p.ToA, 0, 8, id+2)
			if err := execOK(p.D, next); err != nil {
				t.Fatalf("op after rejected batch: %v", err)
			}
		})
	}
}
