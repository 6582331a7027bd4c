package fabrictest

import (
	"errors"
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
)

// testRegions checks Alloc: zeroed memory (also when reusing freed
// space), bad sizes, the DomainSize bound, and that a region allocated
// after the handshake is reachable once its Desc is passed along.
func testRegions(t *testing.T, newAddr func(*testing.T) string) {
	const domain = 4 << 20
	o := fabric.Options{DomainSize: domain}
	ln := listen(t, newAddr, o)
	p := connect(t, ln, o, 4096, 4096)

	t.Run("Zeroed", func(t *testing.T) {
		for round := 0; round < 3; round++ {
			r, err := p.D.Alloc(1 << 20)
			if err != nil {
				t.Fatalf("Alloc round %d: %v", round, err)
			}
			if r.Len() != 1<<20 || len(r.Bytes()) != 1<<20 {
				t.Fatalf("Alloc(1 MiB): Len %d, Bytes %d", r.Len(), len(r.Bytes()))
			}
			for i, b := range r.Bytes() {
				if b != 0 {
					t.Fatalf("round %d: new region byte %d is %#x", round, i, b)
				}
			}
			for i := range r.Bytes() {
				r.Bytes()[i] = 0xFF
			}
			if err := r.Close(); err != nil {
				t.Fatalf("Region.Close: %v", err)
			}
		}
	})
	t.Run("BadSize", func(t *testing.T) {
		for _, n := range []int{0, -1} {
			if r, err := p.D.Alloc(n); err == nil {
				r.Close()
				t.Errorf("Alloc(%d) succeeded", n)
			}
		}
	})
	t.Run("DomainSize", func(t *testing.T) {
		if r, err := p.D.Alloc(2 * domain); !errors.Is(err, fabric.ErrNoMemory) {
			if err == nil {
				r.Close()
			}
			t.Fatalf("Alloc beyond DomainSize %d: %v, want ErrNoMemory", domain, err)
		}
	})
	t.Run("AllocAfterEstablish", func(t *testing.T) {
		// The acceptor grants a new region and WRITEs its Desc into the
		// dialer's region; the dialer picks it up and uses it.
		r, err := p.A.Alloc(8192)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		want := pattern(77, 8192)
		copy(r.Bytes(), want)
		msg, err := p.A.Alloc(64)
		if err != nil {
			t.Fatal(err)
		}
		defer msg.Close()
		r.Desc().Put(msg.Bytes())
		msg.Bytes()[fabric.DescSize] = 1 // "present" flag, written last in the same WRITE; checked after the desc
		if err := execOK(p.A, write(msg, 0, p.ToD, 0, fabric.DescSize+1, 9)); err != nil {
			t.Fatal(err)
		}
		if err := eventually(p.DReg.Bytes(), 0, msg.Bytes()[:fabric.DescSize+1]); err != nil {
			t.Fatal(err)
		}
		d, err := fabric.ParseDesc(p.DReg.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.D.Alloc(8192)
		if err != nil {
			t.Fatal(err)
		}
		defer got.Close()
		if err := execOK(p.D, read(got, 0, d, 0, 8192, 10)); err != nil {
			t.Fatalf("READ of a region granted after Establish: %v", err)
		}
		if err := equal("READ of late region", got.Bytes(), want); err != nil {
			t.Fatal(err)
		}
	})
}
