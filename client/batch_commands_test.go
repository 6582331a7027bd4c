package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jakiro-kv/jakiro/client"
)

// TestBatchCommands: the memcached commands in one pipelined Batch, on
// one server and split over two, with the outcomes and errors they have
// one at a time; a compare-and-swap with version 0 is refused unsent.
func TestBatchCommands(t *testing.T) {
	for _, servers := range []int{1, 2} {
		t.Run(map[int]string{1: "one-server", 2: "two-servers"}[servers], func(t *testing.T) {
			var listens []string
			for i := range servers {
				listens = append(listens, shmListen(t, string(rune('a'+i))))
			}
			_, addrs := startServers(t, listens...)
			c := dialAll(t, addrs)
			ctx := context.Background()
			if err := c.Put(ctx, []byte("n"), []byte("41"), 0); err != nil {
				t.Fatal(err)
			}
			var b client.Batch
			for round := range 2 { // the second reuses the batch's memory
				if err := c.Delete(ctx, []byte("a")); err != nil && !errors.Is(err, client.ErrNotFound) {
					t.Fatal(err)
				}
				b.Reset()
				value := []byte("one")
				set := b.Set([]byte("a"), value, 0, 7)
				copy(value, "XXX") // the batch took its own copy
				addExisting := b.Add([]byte("a"), []byte("two"), 0, 0)
				replaceMissing := b.Replace([]byte("missing"), []byte("x"), 0, 0)
				appendA := b.Append([]byte("a"), []byte("!"))
				incr := b.Incr([]byte("n"), 1)
				decrMissing := b.Decr([]byte("missing"), 1)
				created := b.Counter([]byte("c"), client.CounterArgs{Delta: 1, Create: true, Initial: 10})
				item := b.GetItem([]byte("a"))
				casZero := b.CompareAndSwap([]byte("a"), []byte("z"), 0, 0, 0)
				touchMissing := b.Touch([]byte("missing"), 5)
				if err := c.Run(ctx, &b); err != nil {
					t.Fatal(err)
				}
				if v, err := b.ResultVersion(set); err != nil || v == 0 {
					t.Fatalf("round %d: set: %d %v", round, v, err)
				}
				for _, e := range []struct {
					name   string
					i      int
					target error
				}{{"add of an existing key", addExisting, client.ErrNotStored}, {"replace of a missing key", replaceMissing, client.ErrNotStored},
					{"decr of a missing key", decrMissing, client.ErrNotFound}, {"cas with version 0", casZero, client.ErrBadRequest},
					{"touch of a missing key", touchMissing, client.ErrNotFound}} {
					if _, err := b.Result(e.i); !errors.Is(err, e.target) {
						t.Fatalf("round %d: %s: %v, want %v", round, e.name, err, e.target)
					}
				}
				if _, err := b.ResultVersion(appendA); err != nil {
					t.Fatalf("round %d: append: %v", round, err)
				}
				if n, err := b.ResultCount(incr); err != nil || n != uint64(42+round) {
					t.Fatalf("round %d: incr: %d %v", round, n, err)
				}
				// Created at 10, then incremented.
				if n, err := b.ResultCount(created); err != nil || n != uint64(10+round) {
					t.Fatalf("round %d: counter created: %d %v", round, n, err)
				}
				it, err := b.ResultItem(item)
				if err != nil || string(it.Value) != "one!" || it.Flags != 7 || it.Version == 0 {
					t.Fatalf("round %d: gets: %+v %v", round, it, err)
				}
				// cas: the version just read wins once, then mismatches.
				b.Reset()
				win := b.CompareAndSwap([]byte("a"), []byte("cas"), 0, 0, it.Version)
				if err := c.Run(ctx, &b); err != nil {
					t.Fatal(err)
				}
				if _, err := b.ResultVersion(win); err != nil {
					t.Fatalf("round %d: cas with the current version: %v", round, err)
				}
				b.Reset()
				lose := b.CompareAndSwap([]byte("a"), []byte("late"), 0, 0, it.Version)
				if err := c.Run(ctx, &b); err != nil {
					t.Fatal(err)
				}
				if _, err := b.Result(lose); !errors.Is(err, client.ErrExists) {
					t.Fatalf("round %d: cas with an old version: %v, want ErrExists", round, err)
				}
				if v, _ := c.Get(ctx, []byte("a")); string(v) != "cas" {
					t.Fatalf("round %d: a = %q after cas", round, v)
				}
			}
		})
	}
}

// A reused Batch of commands allocates nothing once warm.
func TestBatchCommandsAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector; run without -race")
	}
	c := dial(t, startServer(t, "shm"))
	ctx := context.Background()
	if err := c.Put(ctx, []byte("n"), []byte("0"), 0); err != nil {
		t.Fatal(err)
	}
	var b client.Batch
	a, n, val := []byte("a"), []byte("n"), make([]byte, 100)
	run := func() {
		b.Reset()
		b.Set(a, val, 0, 1)
		b.Append(a, val[:10])
		b.Incr(n, 1)
		it := b.GetItem(a)
		b.Touch(a, 60)
		if err := c.Run(ctx, &b); err != nil {
			t.Fatal(err)
		}
		if got, err := b.ResultItem(it); err != nil || len(got.Value) != 110 {
			t.Fatalf("gets: %d bytes, %v", len(got.Value), err)
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("%v allocations per batch of five commands", n)
	}
}
