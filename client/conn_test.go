package client

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jakiro-kv/jakiro/fabric/providers" // the fabric the test dials
	"github.com/jakiro-kv/jakiro/rfp"
	jserver "github.com/jakiro-kv/jakiro/server"
)

// A conn whose server goes away says so: Done closes, Err says why, and
// an operation fails instead of waiting.
func TestConnServerGone(t *testing.T) {
	srv, err := jserver.New(jserver.Config{Listen: "shm://" + filepath.Join(t.TempDir(), "s.sock"), Partitions: 1, Memory: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go srv.Serve(ctx)
	defer srv.Close()
	var cfg config
	cfg.engine.FetchDelayNS = -1
	c, err := dial(ctx, srv.Addr(), cfg, groupFor(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if _, err := c.do(ctx, 0, rfp.OpGet, []byte("k"), nil, 0, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GET before the server went: %v", err)
	}
	if c.err() != nil {
		t.Fatalf("err %v while the server is up", c.err())
	}
	srv.Close()
	select {
	case <-c.done():
	case <-ctx.Done():
		t.Fatal("Done not closed after the server closed")
	}
	if c.err() == nil {
		t.Fatal("no error after the server closed")
	}
	if _, err := c.do(ctx, 0, rfp.OpGet, []byte("k"), nil, 0, nil); err == nil || ctx.Err() != nil {
		t.Fatalf("GET after the server went: %v (context %v)", err, ctx.Err())
	}
}

// A connection whose NIC is a thread (tcp) is cold until its first answer
// (its driver yields the core more often meanwhile: group.go), then warm
// for good; a shm connection is never cold.
func TestConnColdUntilFirstAnswer(t *testing.T) {
	for _, listen := range []string{"tcp://127.0.0.1:0", "shm://" + filepath.Join(t.TempDir(), "c.sock")} {
		srv, err := jserver.New(jserver.Config{Listen: listen, Partitions: 1, Memory: 16 << 20})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		go srv.Serve(ctx)
		var cfg config
		cfg.engine.FetchDelayNS = -1
		c, err := dial(ctx, srv.Addr(), cfg, groupFor(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		tcp := listen[:3] == "tcp"
		if c.cold.Load() != tcp {
			t.Errorf("%s: cold %v before the first answer, want %v", listen[:3], c.cold.Load(), tcp)
		}
		if _, err := c.do(ctx, 0, rfp.OpGet, []byte("k"), nil, 0, nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: GET: %v", listen[:3], err)
		}
		if c.cold.Load() {
			t.Errorf("%s: cold after its first answer", listen[:3])
		}
		c.close()
		srv.Close()
		cancel()
	}
}
