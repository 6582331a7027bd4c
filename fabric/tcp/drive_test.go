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
