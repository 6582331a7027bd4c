package tcp

import (
	"bytes"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// A corked connection stages what Post and RingBell are given; Uncork
// sends it, and then it lands.
func TestCorkHoldsUntilUncork(t *testing.T) {
	d, a := pair(t, 4096, fabric.Options{})
	ck := d.c.(fabric.Corker)
	msg := []byte("corked until uncorked")
	copy(d.mine.Bytes(), msg)
	ck.Cork()
	op := fabric.Op{Kind: fabric.OpWrite, ID: 1, Local: d.mine, Remote: d.peer, Len: len(msg)}
	if err := d.c.Post([]fabric.Op{op}); err != nil {
		t.Fatal(err)
	}
	if err := d.c.(fabric.Ringer).RingBell(0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if bytes.Equal(a.mine.Bytes()[:len(msg)], msg) {
		t.Fatal("a corked WRITE landed before Uncork")
	}
	ck.Uncork()
	if cs := wait(t, d.c, 1); cs[0].Err != nil {
		t.Fatal(cs[0].Err)
	}
	if !bytes.Equal(a.mine.Bytes()[:len(msg)], msg) {
		t.Fatal("the WRITE completed but its bytes are not there")
	}
}
