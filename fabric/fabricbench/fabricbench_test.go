package fabricbench_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
	_ "github.com/jakiro-kv/jakiro/fabric/shm" // the provider always available
)

func TestMain(m *testing.M) {
	fabricbench.ServeChildIfRequested()
	os.Exit(m.Run())
}

func addr(t *testing.T) string {
	d, err := os.MkdirTemp("", "jkbench")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return "shm://" + filepath.Join(d, "s.sock")
}

func TestServeRun(t *testing.T) {
	ln, err := fabric.Listen(addr(t), fabric.Options{})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- fabricbench.Serve(ln, 4096) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	r, err := fabricbench.RunN(ctx, ln.Addr(), fabric.OpWrite, 3, 4, 32, 1001)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops != 1001 || r.Mops <= 0 {
		t.Fatalf("RunN: %v", r)
	}
	r, err = fabricbench.Run(ctx, ln.Addr(), fabric.OpRead, 2, 8, 64, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops == 0 || r.Elapsed < 50*time.Millisecond {
		t.Fatalf("Run: %v", r)
	}
	t.Log(r)
	// Window larger than the region: slots wrap.
	if _, err := fabricbench.RunN(ctx, ln.Addr(), fabric.OpRead, 1, 256, 32, 1000); err != nil {
		t.Fatalf("wrapping window: %v", err)
	}
	// Ops larger than the grant fail cleanly.
	if _, err := fabricbench.RunN(ctx, ln.Addr(), fabric.OpRead, 1, 1, 8192, 10); err == nil {
		t.Fatal("ops larger than the granted region succeeded")
	}
	for _, bad := range [][3]int{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}} {
		if _, err := fabricbench.RunN(ctx, ln.Addr(), fabric.OpRead, bad[0], bad[1], bad[2], 1); err == nil {
			t.Errorf("RunN(initiators %d, window %d, size %d) succeeded", bad[0], bad[1], bad[2])
		}
	}
	ln.Close()
	if err := <-served; err != nil {
		t.Fatalf("Serve after Close: %v", err)
	}
}

func TestStartServer(t *testing.T) {
	a := addr(t)
	srv, err := fabricbench.StartServer(a, 1<<16, "-test.run=^$")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := fabricbench.RunN(ctx, a, fabric.OpRead, 2, 8, 32, 10000)
	if err != nil {
		srv.Stop()
		t.Fatal(err)
	}
	if r.Ops != 10000 {
		t.Fatalf("%v", r)
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func TestEcho(t *testing.T) {
	ln, err := fabric.Listen(addr(t), fabric.Options{})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- fabricbench.ServeEcho(ln) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := fabricbench.DialEcho(ctx, ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	mem := e.Local.Bytes()
	for i := 0; i < 1000; i++ {
		// A payload of its own each time: the response must be this
		// request's, not a stale one.
		for j := 4; j < fabricbench.EchoReq-4; j++ {
			mem[j] = byte(i + j)
		}
		if err := e.RoundTrip(); err != nil {
			t.Fatalf("round trip %d: %v", i, err)
		}
		resp := mem[fabricbench.EchoRespOff:]
		for j := 4; j < fabricbench.EchoReq-4; j++ {
			if resp[j] != byte(i+j) {
				t.Fatalf("round trip %d: response byte %d is %d, want %d", i, j, resp[j], byte(i+j))
			}
		}
	}
	if a := testing.AllocsPerRun(100, func() {
		if err := e.RoundTrip(); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("RoundTrip allocates %.1f times", a)
	}
	e.Close()
	ln.Close()
	if err := <-served; err != nil {
		t.Fatalf("ServeEcho after Close: %v", err)
	}
}

func TestStartEcho(t *testing.T) {
	a := addr(t)
	srv, err := fabricbench.StartEcho(a, "-test.run=^$")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := fabricbench.DialEcho(ctx, a)
	if err != nil {
		srv.Stop()
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if err := e.RoundTrip(); err != nil {
			t.Fatalf("round trip %d: %v", i, err)
		}
	}
	e.Close()
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	// Stopped, the target is gone: dialling it fails.
	if _, err := fabricbench.DialEcho(ctx, a); err == nil {
		t.Fatal("dialled an echo target that was stopped")
	}
}
