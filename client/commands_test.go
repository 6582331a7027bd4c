package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
)

// TestCommands: the memcached commands through the SDK on shm and tcp,
// with the edge cases their errors name.
func TestCommands(t *testing.T) {
	for _, fab := range []string{"shm", "tcp"} {
		t.Run(fab, func(t *testing.T) {
			c := dial(t, startServer(t, fab))
			ctx := context.Background()
			k := func(s string) []byte { return []byte(fab + ":" + s) }
			want := func(what string, err, target error) {
				t.Helper()
				if !errors.Is(err, target) {
					t.Fatalf("%s: %v, want %v", what, err, target)
				}
			}

			// add of an existing key
			v1, err := c.Add(ctx, k("lock"), []byte("me"), 0, 5)
			if err != nil || v1 == 0 {
				t.Fatalf("add: %d %v", v1, err)
			}
			_, err = c.Add(ctx, k("lock"), []byte("you"), 0, 0)
			want("add of an existing key", err, client.ErrNotStored)
			it, err := c.GetItem(ctx, k("lock"))
			if err != nil || string(it.Value) != "me" || it.Flags != 5 || it.Version != v1 {
				t.Fatalf("gets: %+v %v (version %d)", it, err, v1)
			}
			// replace, append and prepend of a missing key
			_, err = c.Replace(ctx, k("none"), []byte("x"), 0, 0)
			want("replace of a missing key", err, client.ErrNotStored)
			_, err = c.Append(ctx, k("none"), []byte("x"))
			want("append to a missing key", err, client.ErrNotStored)
			_, err = c.Prepend(ctx, k("none"), []byte("x"))
			want("prepend to a missing key", err, client.ErrNotStored)
			if _, err := c.Append(ctx, k("lock"), []byte("!")); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Prepend(ctx, k("lock"), []byte("<")); err != nil {
				t.Fatal(err)
			}
			if v, _ := c.Get(ctx, k("lock")); string(v) != "<me!" {
				t.Fatalf("after append and prepend: %q", v)
			}
			// cas mismatch
			it, _ = c.GetItem(ctx, k("lock"))
			v2, err := c.CompareAndSwap(ctx, k("lock"), []byte("cas1"), 0, 0, it.Version)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.CompareAndSwap(ctx, k("lock"), []byte("cas2"), 0, 0, it.Version)
			want("cas with a stale version", err, client.ErrExists)
			_, err = c.CompareAndSwap(ctx, k("none"), []byte("x"), 0, 0, v2)
			want("cas of a missing key", err, client.ErrNotFound)
			_, err = c.CompareAndSwap(ctx, k("lock"), []byte("x"), 0, 0, 0)
			want("cas with version 0", err, client.ErrBadRequest)
			// counters: incr on a non-number, decr below zero, wrap
			_, err = c.Incr(ctx, k("lock"), 1)
			want("incr on a non-number", err, client.ErrNotNumeric)
			_, err = c.Incr(ctx, k("n"), 1)
			want("incr of a missing key", err, client.ErrNotFound)
			c.Put(ctx, k("n"), []byte("5"), 0)
			if n, err := c.Decr(ctx, k("n"), 9); err != nil || n != 0 {
				t.Fatalf("decr below zero: %d %v", n, err)
			}
			c.Put(ctx, k("n"), []byte("18446744073709551615"), 0)
			if n, err := c.Incr(ctx, k("n"), 1); err != nil || n != 0 {
				t.Fatalf("incr past 2^64-1: %d %v", n, err)
			}
			if n, err := c.Counter(ctx, k("new"), client.CounterArgs{Delta: 1, Create: true, Initial: 10}); err != nil || n != 10 {
				t.Fatalf("counter create: %d %v", n, err)
			}
			// touch of an expired key
			c.Put(ctx, k("t"), []byte("x"), 1)
			time.Sleep(2100 * time.Millisecond)
			want("touch of an expired key", c.Touch(ctx, k("t"), 60), client.ErrNotFound)
			c.Put(ctx, k("t"), []byte("x"), 1)
			if err := c.Touch(ctx, k("t"), 60); err != nil {
				t.Fatal(err)
			}
			if it, err := c.GetAndTouch(ctx, k("t"), 0); err != nil || string(it.Value) != "x" {
				t.Fatalf("gat: %+v %v", it, err)
			}
			// flush
			if err := c.Flush(ctx, 0); err != nil {
				t.Fatal(err)
			}
			_, err = c.Get(ctx, k("t"))
			want("get after flush", err, client.ErrNotFound)
		})
	}
}

// TestCASAndCountersRace: several clients increment one counter and
// update one value by compare-and-swap loops; no update is lost.
func TestCASAndCountersRace(t *testing.T) {
	addr := startServer(t, "shm")
	ctx := context.Background()
	const clients, rounds = 4, 200
	dial(t, addr).Set(ctx, []byte("cas"), []byte("0"), 0, 0)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		c := dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if _, err := c.Counter(ctx, []byte("ctr"), client.CounterArgs{Delta: 1, Create: true, Initial: 1}); err != nil {
					errs <- err
					return
				}
				for {
					it, err := c.GetItem(ctx, []byte("cas"))
					if err != nil {
						errs <- err
						return
					}
					var n int
					fmt.Sscan(string(it.Value), &n)
					_, err = c.CompareAndSwap(ctx, []byte("cas"), fmt.Append(nil, n+1), 0, 0, it.Version)
					if err == nil {
						break
					}
					if !errors.Is(err, client.ErrExists) {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c := dial(t, addr)
	if v, _ := c.Get(ctx, []byte("ctr")); string(v) != fmt.Sprint(clients*rounds) {
		t.Fatalf("counter %s, want %d", v, clients*rounds)
	}
	if v, _ := c.Get(ctx, []byte("cas")); string(v) != fmt.Sprint(clients*rounds) {
		t.Fatalf("cas value %s, want %d", v, clients*rounds)
	}
}
