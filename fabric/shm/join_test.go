package shm

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabrictest"
)

// Options.OnHello runs once for each dialer's hello, before the acceptor
// has answered it.
func TestOnHello(t *testing.T) {
	var hellos atomic.Int32
	ln, err := fabric.Listen("shm://"+tempSock(t), fabric.Options{DomainSize: 1 << 20, Ready: 1, OnHello: func() { hellos.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 3 {
		p, err := fabrictest.Connect(ctx, ln, fabric.Options{DomainSize: 1 << 20}, 4096, 4096, nil)
		if err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
		if n := hellos.Load(); n != int32(i+1) {
			t.Errorf("after %d joins OnHello ran %d times", i+1, n)
		}
		p.D.Close()
		p.A.Close()
	}
}
