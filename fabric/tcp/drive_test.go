package tcp

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// landed waits up to d for the 8-byte value v at a's region offset 0,
// pumping a's connection while it waits if pump is set.
func landed(a side, v uint64, pump bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if pump {
			a.c.(fabric.Pumper).Pump()
		}
		if binary.LittleEndian.Uint64(a.mine.Bytes()) == v {
			return true
		}
		time.Sleep(20 * time.Microsecond)
	}
	return false
}

func (c *conn) isQuiet() bool {
	c.armMu.Lock()
	defer c.armMu.Unlock()
	return c.quiet.Load()
}

// A target that pumps a connection turns the poller's input events off
// for it; once it releases the connection, or just stops pumping, the
// poller reads it again and the peer's WRITEs land with nobody pumping.
func TestDriverQuietsPoller(t *testing.T) {
	d, a := pair(t, 4096, fabric.Options{})
	ac := a.c.(*conn)
	var v uint64
	write := func() {
		t.Helper()
		v++
		binary.LittleEndian.PutUint64(d.mine.Bytes(), v)
		if err := fabric.Write(d.c, d.mine, 0, d.peer, 0, 8); err != nil {
			t.Fatal(err)
		}
	}
	drive := func() {
		t.Helper()
		for i := 0; i < 200 && !ac.isQuiet(); i++ {
			write()
			if !landed(a, v, true, 10*time.Second) {
				t.Fatalf("WRITE %d did not land while pumped", v)
			}
		}
		if !ac.isQuiet() {
			t.Fatal("input events still on after 200 WRITEs to a pumped connection")
		}
	}

	drive()
	ac.Release()
	if ac.isQuiet() {
		t.Fatal("input events still off after Release")
	}
	write()
	if !landed(a, v, false, 10*time.Second) {
		t.Fatal("WRITE after Release did not land without a pump")
	}

	// A driver that stops without a word: the poller's tick turns input
	// events back on.
	drive()
	time.Sleep(2 * driveWindow)
	write()
	if !landed(a, v, false, 10*time.Second) {
		t.Fatal("WRITE after the driver stopped did not land without a pump")
	}
}

// A Pump that applies a WRITE holds a READ sent right behind it for the
// next Pump, so the target looks at its memory in between: the READ
// returns what the target wrote after the WRITE landed (an RFP request
// and its answer). Release serves a held READ at once.
func TestPumpHoldsReadBehindWrite(t *testing.T) {
	d, a := pair(t, 4096, fabric.Options{})
	ac := a.c.(*conn)
	le := binary.LittleEndian
	var cs [4]fabric.Completion
	// completions polls d until want came or wait passed.
	completions := func(want int, wait time.Duration) int {
		t.Helper()
		got := 0
		for deadline := time.Now().Add(wait); got < want && time.Now().Before(deadline); {
			n, err := d.c.Poll(cs[:])
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs[:n] {
				if c.Err != nil {
					t.Fatal(c.Err)
				}
			}
			got += n
		}
		return got
	}
	v, held, prev := uint64(0), 0, uint64(0)
	for round := 0; round < 200 && held < 6; round++ {
		// Pumped WRITEs until the poller leaves the connection to the
		// pump (TestDriverQuietsPoller): only then do Pumps read it alone.
		for i := 0; i < 200 && !ac.isQuiet(); i++ {
			v++
			le.PutUint64(d.mine.Bytes(), v)
			if err := d.c.Post([]fabric.Op{{Kind: fabric.OpWrite, ID: 1, Local: d.mine, Len: 8, Remote: d.peer}}); err != nil {
				t.Fatal(err)
			}
			if !landed(a, v, true, 10*time.Second) || completions(1, 10*time.Second) != 1 {
				t.Fatalf("WRITE %d did not complete while pumped", v)
			}
		}
		quiet := ac.isQuiet() // else the poller may serve a held READ too
		v++
		le.PutUint64(d.mine.Bytes(), v)
		le.PutUint64(d.mine.Bytes()[8:], 0)
		ops := []fabric.Op{
			{Kind: fabric.OpWrite, ID: 1, Local: d.mine, Len: 8, Remote: d.peer},
			{Kind: fabric.OpRead, ID: 2, Local: d.mine, LocalOff: 8, Len: 8, Remote: d.peer, RemoteOff: 8},
		}
		if err := d.c.Post(ops); err != nil {
			t.Fatal(err)
		}
		if !landed(a, v, true, 10*time.Second) {
			t.Fatalf("WRITE %d did not land while pumped", v)
		}
		wasHeld := ac.held.Load() && quiet
		if wasHeld {
			if n := completions(2, time.Millisecond); n != 1 {
				t.Fatalf("WRITE %d: %d completions with the READ held, want the WRITE's alone", v, n)
			}
		}
		answer := 1000 + v
		le.PutUint64(a.mine.Bytes()[8:], answer) // the target answers between the reads
		if held%2 == 1 {
			ac.Release()
		} else {
			ac.Pump()
		}
		want := 2
		if wasHeld {
			want = 1
		}
		if n := completions(want, 10*time.Second); n != want {
			t.Fatalf("WRITE %d: the READ did not complete after the next read", v)
		}
		got := le.Uint64(d.mine.Bytes()[8:])
		if wasHeld {
			held++
			if got != answer {
				t.Fatalf("WRITE %d: a held READ returned %d, want %d (written after the WRITE landed)", v, got, answer)
			}
		} else if got != answer && got != prev {
			t.Fatalf("WRITE %d: READ returned %d, want %d or the answer before, %d", v, got, answer, prev)
		}
		prev = answer
	}
	if held < 6 {
		t.Fatalf("only %d of the READs posted right behind a WRITE to a pumped connection were held", held)
	}
}
