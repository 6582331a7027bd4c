package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/rfp"
)

var modes = []rfp.Mode{rfp.ModeRFP, rfp.ModeReply, rfp.ModeHybrid}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dialT(t testing.TB, addr string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.Dial(ctxT(t), addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func value(key string, n int) []byte {
	v := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(len(key)), uint64(n)))
	for i := range v {
		v[i] = byte(r.IntN(256))
	}
	copy(v, key)
	return v
}

// TestEndToEnd: one server process per fabric, every mode against it.
func TestEndToEnd(t *testing.T) {
	for _, fab := range e2eFabrics() {
		t.Run(fab, func(t *testing.T) {
			srv := startServer(t, e2eListen(t, fab))
			for _, m := range modes {
				t.Run(m.String(), func(t *testing.T) {
					t.Run("Basic", func(t *testing.T) { testBasic(t, srv.Addr, m) })
					t.Run("ValuesLargerThanRFS", func(t *testing.T) { testLargeValues(t, srv.Addr, m) })
					t.Run("Window", func(t *testing.T) { testWindow(t, srv.Addr, m) })
					t.Run("ManyClients", func(t *testing.T) { testManyClients(t, srv.Addr, m) })
				})
			}
			t.Run("ClientKilled", func(t *testing.T) { testClientKilled(t, srv.Addr) })
			t.Run("BadInput", func(t *testing.T) { testBadInput(t, srv.Addr) })
			t.Run("MalformedSlots", func(t *testing.T) { testMalformedSlots(t, srv.Addr) })
			t.Run("Isolation", func(t *testing.T) { testIsolation(t, srv.Addr) })
			t.Run("WrapMarker", func(t *testing.T) { testWrapMarker(t, srv.Addr) })
		})
	}
}

func testBasic(t *testing.T, addr string, m rfp.Mode) {
	c := dialT(t, addr, client.WithMode(m))
	ctx := ctxT(t)
	key := []byte("basic:" + m.String())
	if _, err := c.Get(ctx, key); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("get of a missing key: %v", err)
	}
	if err := c.Put(ctx, key, []byte("v1"), 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, key, []byte("v2, longer"), 0); err != nil {
		t.Fatal(err)
	}
	v, err := c.Get(ctx, key)
	if err != nil || string(v) != "v2, longer" {
		t.Fatalf("get: %q %v", v, err)
	}
	if err := c.Put(ctx, []byte("empty:"+m.String()), nil, 0); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, []byte("empty:"+m.String())); err != nil || len(v) != 0 {
		t.Fatalf("empty value: %q %v", v, err)
	}
	if err := c.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, key); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := c.Get(ctx, key); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	cnt := c.Counters()
	if cnt.Ops != 9 {
		t.Fatalf("ops counted %d, want 9", cnt.Ops)
	}
	if m == rfp.ModeReply && cnt.Replied != cnt.Ops {
		t.Fatalf("reply mode: %d of %d ops replied", cnt.Replied, cnt.Ops)
	}
	if m == rfp.ModeRFP && cnt.Replied != 0 {
		t.Fatalf("rfp mode: %d replies", cnt.Replied)
	}
}

func testLargeValues(t *testing.T, addr string, m rfp.Mode) {
	c := dialT(t, addr, client.WithMode(m), client.WithRFS(rfp.RFSFor(32)))
	ctx := ctxT(t)
	sizes := []int{0, 1, 31, 32, 33, 100, 1000, 4096, 40000, c.MaxValue()}
	for _, n := range sizes {
		key := fmt.Sprintf("large:%s:%d", m, n)
		if err := c.Put(ctx, []byte(key), value(key, n), 0); err != nil {
			t.Fatalf("put %d B: %v", n, err)
		}
	}
	before := c.Counters()
	for _, n := range sizes {
		key := fmt.Sprintf("large:%s:%d", m, n)
		v, err := c.Get(ctx, []byte(key))
		if err != nil || !bytes.Equal(v, value(key, n)) {
			t.Fatalf("get %d B: len %d, %v", n, len(v), err)
		}
	}
	d := c.Counters().Sub(before)
	over := 0 // values whose response record is longer than the RFS
	for _, n := range sizes {
		if rfp.RFSFor(n) > rfp.RFSFor(32) {
			over++
		}
	}
	if m == rfp.ModeRFP && d.ExtraReads < uint64(over) {
		t.Fatalf("%d values over RFS %d fetched with %d extra READs, want >= %d", over, rfp.RFSFor(32), d.ExtraReads, over)
	}
	if err := c.Put(ctx, []byte("too-big"), make([]byte, c.MaxValue()+1), 0); !errors.Is(err, client.ErrTooLarge) {
		t.Fatalf("oversize value: %v", err)
	}
}

func testWindow(t *testing.T, addr string, m rfp.Mode) {
	c := dialT(t, addr, client.WithMode(m), client.WithWindow(8))
	ctx := ctxT(t)
	var b client.Batch
	n := scale(300)
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("win:%s:%d", m, i))
		b.Put(keys[i], value(string(keys[i]), 20+i%90), 0)
	}
	if err := c.Run(ctx, &b); err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		if _, err := b.Result(i); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	b.Reset()
	for i := range keys {
		b.Get(keys[i])
	}
	b.Get([]byte("win:missing"))
	if err := c.Run(ctx, &b); err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		v, err := b.Result(i)
		if err != nil || !bytes.Equal(v, value(string(keys[i]), 20+i%90)) {
			t.Fatalf("get %d: %v", i, err)
		}
	}
	if _, err := b.Result(n); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("missing key in batch: %v", err)
	}
}

// testManyClients: goroutines with their own clients in this process plus
// two client processes, all checking their own keys.
func testManyClients(t *testing.T, addr string, m rfp.Mode) {
	for i := 0; i < 2; i++ {
		cmd := child(t, "client", addr, "JAKIRO_E2E_MODE="+m.String(), fmt.Sprintf("JAKIRO_E2E_ID=%d", i))
		defer func() {
			if err := cmd.Wait(); err != nil {
				t.Errorf("client process %d: %v", i, err)
			}
		}()
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 12; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- clientWorkload(addr, m, fmt.Sprintf("g%d", g), scale(300))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// clientWorkload writes and reads back its own keys through one client,
// sharing it between two goroutines (the client is safe for concurrent use).
func clientWorkload(addr string, m rfp.Mode, id string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.WithMode(m))
	if err != nil {
		return err
	}
	defer c.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for half := 0; half < 2; half++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				key := []byte(fmt.Sprintf("%s:%s:%d:%d", m, id, half, i))
				want := value(string(key), 8+i%200)
				if err := c.Put(ctx, key, want, 0); err != nil {
					errs <- fmt.Errorf("%s put: %w", key, err)
					return
				}
				got, err := c.Get(ctx, key)
				if err != nil || !bytes.Equal(got, want) {
					errs <- fmt.Errorf("%s get: %d bytes, %v", key, len(got), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func clientChild() int {
	m, _ := rfp.ParseMode(os.Getenv("JAKIRO_E2E_MODE"))
	if err := clientWorkload(os.Getenv("JAKIRO_E2E_ADDR"), m, "proc"+os.Getenv("JAKIRO_E2E_ID"), scale(500)); err != nil {
		fmt.Fprintln(os.Stderr, "client process:", err)
		return 1
	}
	return 0
}

// victimChild hammers the server until it is killed.
func victimChild() int {
	ctx := context.Background()
	c, err := client.Dial(ctx, os.Getenv("JAKIRO_E2E_ADDR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "victim: connected")
	var b client.Batch
	for i := 0; ; i++ {
		b.Reset()
		for j := 0; j < 32; j++ {
			key := []byte(fmt.Sprintf("victim:%d", j))
			if i%2 == 0 {
				b.Put(key, value(string(key), 500), 0)
			} else {
				b.Get(key)
			}
		}
		if err := c.Run(ctx, &b); err != nil {
			fmt.Fprintln(os.Stderr, "victim:", err)
			return 1
		}
	}
}

func clientsOnServer(t *testing.T, c *client.Client) int {
	st, err := c.Stats(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var ps struct{ Clients int }
	if err := json.Unmarshal(st[0], &ps); err != nil {
		t.Fatal(err)
	}
	return ps.Clients
}

// testClientKilled: a client process is SIGKILLed with requests in flight;
// the server reclaims its rings and goes on serving everyone else.
func testClientKilled(t *testing.T, addr string) {
	c := dialT(t, addr)
	// Clients of earlier subtests may still be on their way out.
	const base = 1
	deadline := time.Now().Add(10 * time.Second)
	for clientsOnServer(t, c) != base && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	for round := 0; round < 3; round++ {
		v := child(t, "victim", addr)
		deadline := time.Now().Add(10 * time.Second)
		for clientsOnServer(t, c) != base+1 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(150 * time.Millisecond) // let it get requests in flight
		v.Process.Signal(syscall.SIGKILL)
		v.Wait()
		for clientsOnServer(t, c) != base && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := clientsOnServer(t, c); n != base {
			t.Fatalf("round %d: server still counts %d clients, want %d", round, n, base)
		}
	}
	if err := clientWorkload(addr, rfp.ModeRFP, "after-kill", scale(100)); err != nil {
		t.Fatal("server unusable after a client was killed:", err)
	}
}

func testBadInput(t *testing.T, addr string) {
	c := dialT(t, addr)
	ctx := ctxT(t)
	if err := c.Put(ctx, nil, []byte("x"), 0); !errors.Is(err, client.ErrBadKey) {
		t.Fatalf("empty key: %v", err)
	}
	if _, err := c.Get(ctx, bytes.Repeat([]byte("k"), 251)); !errors.Is(err, client.ErrBadKey) {
		t.Fatalf("251-byte key: %v", err)
	}
	if err := c.Put(ctx, bytes.Repeat([]byte("k"), 250), []byte("max key"), 0); err != nil {
		t.Fatalf("250-byte key: %v", err)
	}
	if err := c.Put(ctx, []byte("k"), make([]byte, c.MaxValue()+1), 0); !errors.Is(err, client.ErrTooLarge) {
		t.Fatalf("oversize value: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Get(cctx, []byte("k")); err == nil {
		// A fast server may answer before the first context check; both
		// outcomes are fine as long as the client is still usable.
		t.Log("get with a cancelled context completed anyway")
	}
	if err := c.Put(ctx, []byte("still-ok"), []byte("1"), 0); err != nil {
		t.Fatalf("client unusable after a cancelled call: %v", err)
	}
}
