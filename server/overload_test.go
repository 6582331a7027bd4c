package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/internal/stressval"
)

// Overload: a real `jakiro server` is written twice its --memory. In cache
// mode it evicts and its RSS stays within 1.1 × the budget plus the RSS it
// had idle and 16 MiB (the Go heap and the rings of the writing client);
// in store mode it refuses with ErrNoMemory and every acknowledged PUT
// stays readable.
const (
	overloadBudget  = 64 << 20
	overloadValue   = 4 << 10
	overloadOverRSS = 16 << 20
)

func TestOverload(t *testing.T) {
	bin := buildJakiro(t)
	t.Run("CacheEvicts", func(t *testing.T) { testOverloadCache(t, bin) })
	t.Run("StoreRefuses", func(t *testing.T) { testOverloadStore(t, bin) })
	t.Run("ItemSizeSplitsMemory", func(t *testing.T) { testItemSize(t, bin) })
}

func overloadServer(t *testing.T, bin string, extra ...string) (*jakiroProc, *client.Client, int64) {
	srv := startJakiro(t, bin, listenFor(t, "shm"), append([]string{"--memory", fmt.Sprint(overloadBudget),
		"--max-value", "8KiB", "--item-size", fmt.Sprint(overloadValue + 16)}, extra...)...)
	idle := rss(t, srv.pid())
	return srv, dialT(t, srv.Addr), idle
}

func overloadKey(i int) []byte { return fmt.Appendf(nil, "overload:%08d", i) }

// putAll PUTs keys [from, to) with their stressval values in batches and
// returns each one's error.
func putAll(t *testing.T, c *client.Client, from, to int) []error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	errs := make([]error, 0, to-from)
	var b client.Batch
	vals := make([][]byte, 64)
	for base := from; base < to; base += len(vals) {
		b.Reset()
		n := min(len(vals), to-base)
		for j := range n {
			k := overloadKey(base + j)
			vals[j] = stressval.Append(vals[j][:0], k, 1, uint64(base+j), overloadValue)
			b.Put(k, vals[j], 0)
		}
		if err := c.Run(ctx, &b); err != nil {
			t.Fatal(err)
		}
		for j := range n {
			_, err := b.Result(j)
			errs = append(errs, err)
		}
	}
	return errs
}

// getValid GETs key i and checks it holds the value putAll wrote.
func getValid(ctx context.Context, c *client.Client, i int) error {
	k := overloadKey(i)
	v, err := c.Get(ctx, k)
	if err != nil {
		return err
	}
	var scratch [stressval.HeaderSize]byte
	got, err := stressval.Check(k, v, &scratch)
	if err != nil {
		return err
	}
	if got.Version != uint64(i) || len(v) != overloadValue {
		return fmt.Errorf("key %d holds version %d of %d bytes", i, got.Version, len(v))
	}
	return nil
}

type kvTotals struct{ Items, Evictions, Capacity uint64 }

func serverKV(t *testing.T, c *client.Client) kvTotals {
	t.Helper()
	st, err := c.Stats(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var tot kvTotals
	for _, raw := range st {
		var ps struct{ KV kvTotals }
		if err := json.Unmarshal(raw, &ps); err != nil {
			t.Fatal(err)
		}
		tot.Items += ps.KV.Items
		tot.Evictions += ps.KV.Evictions
		tot.Capacity += ps.KV.Capacity
	}
	return tot
}

func checkRSS(t *testing.T, srv *jakiroProc, idle int64) {
	t.Helper()
	got := rss(t, srv.pid())
	limit := overloadBudget*11/10 + idle + overloadOverRSS
	t.Logf("RSS %.1f MiB (idle %.1f MiB); limit 1.1 × %d MiB + idle + %d MiB = %.1f MiB",
		float64(got)/(1<<20), float64(idle)/(1<<20), overloadBudget>>20, overloadOverRSS>>20, float64(limit)/(1<<20))
	if got > limit {
		t.Errorf("server RSS %d MiB over the limit %d MiB", got>>20, limit>>20)
	}
}

func testOverloadCache(t *testing.T, bin string) {
	srv, c, idle := overloadServer(t, bin)
	n := 2 * overloadBudget / overloadValue
	for i, err := range putAll(t, c, 0, n) {
		if err != nil {
			t.Fatalf("cache mode PUT %d of %d: %v", i, n, err)
		}
	}
	tot := serverKV(t, c)
	t.Logf("%d PUTs of %d B: %d items kept, %d evicted", n, overloadValue, tot.Items, tot.Evictions)
	if tot.Evictions == 0 || tot.Items >= uint64(n) {
		t.Fatalf("twice the budget written, yet %d evictions and %d items", tot.Evictions, tot.Items)
	}
	checkRSS(t, srv, idle)
	// The newest items survive, intact.
	ctx := ctxT(t)
	for i := n - 100; i < n; i++ {
		if err := getValid(ctx, c, i); err != nil {
			t.Fatalf("recent key %d: %v", i, err)
		}
	}
	// Whatever older item is still there is intact; the rest is gone.
	found := 0
	for i := 0; i < n; i += 7 {
		switch err := getValid(ctx, c, i); {
		case err == nil:
			found++
		case !errors.Is(err, client.ErrNotFound):
			t.Fatalf("key %d: %v", i, err)
		}
	}
	t.Logf("%d of %d sampled keys still there", found, (n+6)/7)
}

func testOverloadStore(t *testing.T, bin string) {
	srv, c, idle := overloadServer(t, bin, "--store")
	n := 2 * overloadBudget / overloadValue
	errs := putAll(t, c, 0, n)
	var acked []int
	refused := 0
	for i, err := range errs {
		switch {
		case err == nil:
			acked = append(acked, i)
		case errors.Is(err, client.ErrNoMemory):
			refused++
		default:
			t.Fatalf("store mode PUT %d: %v, want ok or ErrNoMemory", i, err)
		}
	}
	tot := serverKV(t, c)
	t.Logf("%d PUTs of %d B: %d acknowledged, %d refused with ErrNoMemory; %d items, %d evictions",
		n, overloadValue, len(acked), refused, tot.Items, tot.Evictions)
	if refused == 0 || len(acked) == 0 {
		t.Fatalf("twice the budget written: %d acknowledged, %d refused", len(acked), refused)
	}
	if tot.Evictions != 0 || tot.Items != uint64(len(acked)) {
		t.Fatalf("store mode lost items: %d acknowledged, %d stored, %d evicted", len(acked), tot.Items, tot.Evictions)
	}
	checkRSS(t, srv, idle)
	ctx := ctxT(t)
	for _, i := range acked {
		if err := getValid(ctx, c, i); err != nil {
			t.Fatalf("acknowledged key %d: %v", i, err)
		}
	}
}

// testItemSize: --item-size moves memory from the index to the log.
func testItemSize(t *testing.T, bin string) {
	capacity := func(itemSize string) uint64 {
		srv := startJakiro(t, bin, listenFor(t, "shm"), "--memory", "64MiB", "--item-size", itemSize)
		c := dialT(t, srv.Addr)
		tot := serverKV(t, c)
		c.Close()
		if took, ok := srv.terminate(10 * time.Second); !ok {
			t.Fatalf("server ignored SIGTERM for %v", took)
		}
		return tot.Capacity
	}
	small, large := capacity("48B"), capacity("4KiB")
	t.Logf("log capacity of 64 MiB: %d MiB for 48 B items, %d MiB for 4 KiB items", small>>20, large>>20)
	if large <= small || float64(small) > 0.8*(64<<20) || float64(large) < 0.95*(64<<20) {
		t.Fatalf("log capacity %d for 48 B items, %d for 4 KiB: want about 3/4 and nearly all of 64 MiB", small, large)
	}
}
