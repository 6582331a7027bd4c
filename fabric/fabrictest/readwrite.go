package fabrictest

import (
	"fmt"
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
)

// sizes covers one byte, odd sizes, a 32-byte slot, a page and 1 MiB.
var sizes = []int{1, 7, 32, 36, 4096, 65537, 1 << 20}

const (
	rwSpan = 1<<20 + 8192 // region size: the largest transfer plus offsets
	guard  = 0xEE         // target bytes around a WRITE must keep it
)

// testReadWrite moves every size in both directions (dialer to acceptor
// and back), at aligned and odd offsets, checking the data at the target,
// by READ-back, and that neighbouring bytes are untouched.
func testReadWrite(t *testing.T, newAddr func(*testing.T) string) {
	ln := listen(t, newAddr, fabric.Options{})
	p := connect(t, ln, fabric.Options{}, rwSpan, rwSpan)
	dirs := []struct {
		name          string
		c             fabric.Conn
		local, target *fabric.Region
		remote        fabric.Desc
	}{
		{"DialerToAcceptor", p.D, p.DReg, p.AReg, p.ToA},
		{"AcceptorToDialer", p.A, p.AReg, p.DReg, p.ToD},
	}
	id := uint64(1)
	for _, dir := range dirs {
		t.Run(dir.name, func(t *testing.T) {
			for _, n := range sizes {
				for _, off := range [][2]int{{0, 0}, {5, 11}} {
					loff, roff := off[0], off[1]
					if err := moveOnce(dir.c, dir.local, dir.target, dir.remote, loff, roff, n, &id); err != nil {
						t.Fatalf("%d bytes, local off %d, remote off %d: %v", n, loff, roff, err)
					}
				}
			}
		})
	}
	t.Run("SubDesc", func(t *testing.T) {
		// A Desc narrowed with Sub addresses the same bytes.
		want := pattern(5, 100)
		copy(p.AReg.Bytes()[1000:], want)
		sub := p.ToA.Sub(1000, 100)
		clear(p.DReg.Bytes()[:100])
		if err := execOK(p.D, read(p.DReg, 0, sub, 0, 100, 1)); err != nil {
			t.Fatal(err)
		}
		if err := equal("READ through Sub desc", p.DReg.Bytes()[:100], want); err != nil {
			t.Fatal(err)
		}
		if err := fabric.Read(p.D, p.DReg, 0, sub, 60, 40); err != nil {
			t.Fatalf("blocking Read at Sub offset: %v", err)
		}
		if err := equal("blocking Read through Sub desc", p.DReg.Bytes()[:40], want[60:]); err != nil {
			t.Fatal(err)
		}
	})
}

// moveOnce WRITEs a fresh pattern of n bytes from local[loff:] to
// remote[roff:], verifies it, then READs another pattern back.
func moveOnce(c fabric.Conn, local, target *fabric.Region, remote fabric.Desc, loff, roff, n int, id *uint64) error {
	*id++
	tm := target.Bytes()
	lo, hi := max(roff-64, 0), min(roff+n+64, len(tm))
	for i := lo; i < hi; i++ {
		tm[i] = guard
	}
	w := pattern(*id, n)
	lm := local.Bytes()
	copy(lm[loff:], w)
	if err := execOK(c, write(local, loff, remote, uint64(roff), n, *id)); err != nil {
		return fmt.Errorf("WRITE: %w", err)
	}
	if err := eventually(tm, roff, w); err != nil {
		return fmt.Errorf("WRITE: %w", err)
	}
	for i := lo; i < hi; i++ {
		if (i < roff || i >= roff+n) && tm[i] != guard {
			return fmt.Errorf("WRITE of [%d,%d) changed target byte %d", roff, roff+n, i)
		}
	}
	// READ after WRITE on one connection sees the WRITE.
	clear(lm[loff : loff+n])
	*id++
	if err := execOK(c, read(local, loff, remote, uint64(roff), n, *id)); err != nil {
		return fmt.Errorf("READ back: %w", err)
	}
	if err := equal("READ back", lm[loff:loff+n], w); err != nil {
		return err
	}
	// READ of data the target CPU stored.
	r := pattern(*id, n)
	copy(tm[roff:], r)
	*id++
	if err := execOK(c, read(local, loff, remote, uint64(roff), n, *id)); err != nil {
		return fmt.Errorf("READ: %w", err)
	}
	return equal("READ", lm[loff:loff+n], r)
}
