package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	_ "github.com/jakiro-kv/jakiro/fabric/providers"
	"github.com/jakiro-kv/jakiro/server/servertest"
)

// The bounds: a down server's keys fail within failFast, and a
// server that is back serves within recoverBy. Waits for conditions use
// generous deadlines; these two are asserted per call.
const (
	failFast  = time.Second
	recoverBy = time.Second
	patience  = 30 * time.Second
)

func startServers(t *testing.T, listens ...string) ([]*servertest.Proc, []string) {
	var procs []*servertest.Proc
	var addrs []string
	for _, l := range listens {
		p := servertest.Start(t, l)
		procs = append(procs, p)
		addrs = append(addrs, p.Addr)
	}
	return procs, addrs
}

func shmListen(t *testing.T, name string) string {
	return "shm://" + filepath.Join(t.TempDir(), name+".sock")
}

// listenOn is a server address to listen on for fabric fab (tcp or
// shm); name names an shm socket.
func listenOn(t *testing.T, fab, name string) string {
	if fab == "shm" {
		return shmListen(t, name)
	}
	return "tcp://127.0.0.1:0"
}

// oneServer starts a server on fab, dials it and stores k = "v".
func oneServer(t *testing.T, fab, name string, k []byte) ([]*servertest.Proc, *client.Client) {
	t.Helper()
	procs, addrs := startServers(t, listenOn(t, fab, name))
	c := dialAll(t, addrs)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := c.Put(ctx, k, []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	return procs, c
}

func dialAll(t *testing.T, addrs []string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c, err := client.Dial(ctx, strings.Join(addrs, ","))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func key(i int) []byte { return fmt.Appendf(nil, "key%06d", i) }

// putAll stores n keys through pipelined batches.
func putAll(t *testing.T, c *client.Client, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	var b client.Batch
	for i := 0; i < n; {
		b.Reset()
		for ; i < n && b.Len() < 64; i++ {
			b.Put(key(i), key(i), 0)
		}
		if err := c.Run(ctx, &b); err != nil {
			t.Fatal(err)
		}
		for j := range b.Len() {
			if _, err := b.Result(j); err != nil {
				t.Fatalf("put: %v", err)
			}
		}
	}
}

// items is the item count each server reports.
func items(t *testing.T, c *client.Client) map[string]int {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	out := map[string]int{}
	for _, s := range c.ServerStats(ctx) {
		if s.Err != nil {
			t.Fatalf("stats of %s: %v", s.Addr, s.Err)
		}
		for _, raw := range s.Partitions {
			var p struct{ KV struct{ Items int } }
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatal(err)
			}
			out[s.Addr] += p.KV.Items
		}
	}
	return out
}

// 10,000 keys land within ±15% of even on three servers, as the servers
// themselves count them, and every key reads back through a batch split
// over the servers in the caller's order.
func TestClusterSpread(t *testing.T) {
	for _, mix := range []string{"tcp", "shm+tcp"} {
		t.Run(mix, func(t *testing.T) {
			listens := []string{"tcp://127.0.0.1:0", "tcp://127.0.0.1:0", "tcp://127.0.0.1:0"}
			if mix == "shm+tcp" {
				listens[1] = shmListen(t, "b")
			}
			_, addrs := startServers(t, listens...)
			c := dialAll(t, addrs)
			const n = 10000
			putAll(t, c, n)
			got := items(t, c)
			even := float64(n) / 3
			total := 0
			for _, a := range addrs {
				total += got[a]
				if math.Abs(float64(got[a])-even) > 0.15*even {
					t.Errorf("%s holds %d keys; even is %.0f (±15%%)", a, got[a], even)
				}
			}
			if total != n {
				t.Errorf("servers hold %d keys in all, want %d", total, n)
			}
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			var b client.Batch
			for i := 0; i < n; i += 100 {
				b.Reset()
				for j := i; j < i+100; j++ {
					b.Get(key(j))
				}
				if err := c.Run(ctx, &b); err != nil {
					t.Fatal(err)
				}
				for j := range b.Len() {
					if v, err := b.Result(j); err != nil || string(v) != string(key(i+j)) {
						t.Fatalf("get %s = %q, %v", key(i+j), v, err)
					}
				}
			}
			if v, err := c.Get(ctx, key(7)); err != nil || string(v) != string(key(7)) {
				t.Fatalf("Get = %q, %v", v, err)
			}
			sc := c.ServerCounters()
			for _, s := range sc {
				if !s.Connected || s.Counters.Ops == 0 {
					t.Errorf("server counters %+v: want connected and used", s)
				}
			}
		})
	}
}

// byServer groups keys by the server that holds them.
func byServer(c *client.Client, n int) map[string][]int {
	out := map[string][]int{}
	for i := range n {
		a := c.ServerFor(key(i))
		out[a] = append(out[a], i)
	}
	return out
}

// Kill one of three servers: its keys fail with ErrUnavailable (and
// ErrConnLost) within a second each, the others' keys are served, a batch
// over all of them fails only the dead server's part. Restarted on the
// same address, the same long-lived client serves its keys again within
// a second.
func TestClusterFailover(t *testing.T) {
	procs, addrs := startServers(t, "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", "tcp://127.0.0.1:0")
	c := dialAll(t, addrs)
	const n = 600
	putAll(t, c, n)
	groups := byServer(c, n)
	victim := addrs[1]
	procs[1].Kill()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()

	for _, i := range groups[victim][:50] {
		t0 := time.Now()
		_, err := c.Get(ctx, key(i))
		if d := time.Since(t0); d > failFast {
			t.Errorf("get of a dead server's key took %v (bound %v)", d, failFast)
		}
		if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, client.ErrConnLost) || !strings.Contains(err.Error(), victim) {
			t.Fatalf("get of a dead server's key: %v; want ErrUnavailable, ErrConnLost naming %s", err, victim)
		}
	}
	for _, a := range []string{addrs[0], addrs[2]} {
		for _, i := range groups[a][:50] {
			if v, err := c.Get(ctx, key(i)); err != nil || string(v) != string(key(i)) {
				t.Fatalf("get of live server %s's key: %q, %v", a, v, err)
			}
		}
	}
	var b client.Batch
	for i := range 60 {
		b.Get(key(i))
	}
	t0 := time.Now()
	err := c.Run(ctx, &b)
	if d := time.Since(t0); d > failFast {
		t.Errorf("batch with a dead server's keys took %v (bound %v)", d, failFast)
	}
	if !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("batch: Run = %v, want ErrUnavailable", err)
	}
	for i := range 60 {
		v, err := b.Result(i)
		if c.ServerFor(key(i)) == victim {
			if !errors.Is(err, client.ErrUnavailable) {
				t.Errorf("batch op %d on the dead server: %v", i, err)
			}
		} else if err != nil || string(v) != string(key(i)) {
			t.Errorf("batch op %d on a live server: %q, %v", i, v, err)
		}
	}
	for _, s := range c.ServerCounters() {
		if s.Connected != (s.Addr != victim) {
			t.Errorf("server counters %+v while %s is down", s, victim)
		}
	}

	back := servertest.Start(t, victim) // the same address
	ready := time.Now()
	k := key(groups[victim][0])
	var last error
	for time.Since(ready) < patience {
		if last = c.Put(ctx, k, []byte("again"), 0); last == nil {
			break
		}
		if !errors.Is(last, client.ErrUnavailable) {
			t.Fatalf("put while the server restarts: %v", last)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if last != nil {
		t.Fatalf("restarted server's keys not served after %v: %v", patience, last)
	}
	if d := time.Since(ready); d > recoverBy {
		t.Errorf("restarted server's keys served again after %v (bound %v)", d, recoverBy)
	}
	if v, err := c.Get(ctx, k); err != nil || string(v) != "again" {
		t.Fatalf("get after restart: %q, %v", v, err)
	}
	for _, s := range c.ServerCounters() {
		if !s.Connected || (s.Addr == victim) != (s.Reconnects == 1) {
			t.Errorf("server counters %+v after %s came back", s, back.Addr)
		}
	}
}

// A client of one server recovers when the server restarts: before, it
// stayed broken for good.
func TestSingleServerRecovers(t *testing.T) {
	for _, fab := range []string{"tcp", "shm"} {
		t.Run(fab, func(t *testing.T) {
			procs, c := oneServer(t, fab, "one", []byte("k"))
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			procs[0].Kill()
			t0 := time.Now()
			_, err := c.Get(ctx, []byte("k"))
			if d := time.Since(t0); d > failFast {
				t.Errorf("get after the kill took %v (bound %v)", d, failFast)
			}
			if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, client.ErrConnLost) {
				t.Fatalf("get after the kill: %v; want ErrUnavailable and ErrConnLost", err)
			}
			servertest.Start(t, procs[0].Addr)
			ready := time.Now()
			for {
				_, err = c.Get(ctx, []byte("k"))
				if !errors.Is(err, client.ErrUnavailable) || time.Since(ready) > patience {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if !errors.Is(err, client.ErrNotFound) { // a fresh server: served, and empty
				t.Fatalf("get after the restart: %v", err)
			}
			if d := time.Since(ready); d > recoverBy {
				t.Errorf("served again %v after the restart (bound %v)", d, recoverBy)
			}
		})
	}
}

// A list with a server that is down at Dial still dials; that server's
// keys fail until it starts, and then are served.
func TestDialWithServerDown(t *testing.T) {
	_, addrs := startServers(t, "tcp://127.0.0.1:0")
	downAt := shmListen(t, "later")
	c := dialAll(t, []string{addrs[0], downAt})
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	var k []byte
	for i := 0; k == nil; i++ {
		if c.ServerFor(key(i)) == downAt {
			k = key(i)
		}
	}
	if err := c.Put(ctx, k, []byte("v"), 0); !errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrConnLost) {
		t.Fatalf("put to a server never reached: %v; want ErrUnavailable, not ErrConnLost", err)
	}
	servertest.Start(t, downAt)
	deadline := time.Now().Add(patience)
	for {
		err := c.Put(ctx, k, []byte("v"), 0)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server started late is not served: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := client.Dial(ctx, downAt+"x,"+shmListen(t, "never")); err == nil {
		t.Fatal("Dial succeeded with no server up")
	}
}

func TestDialRejectsBadLists(t *testing.T) {
	ctx := context.Background()
	for _, list := range []string{"tcp://127.0.0.1:1,tcp://127.0.0.1:1", "tcp://127.0.0.1:1,nofabric://x", "tcp://127.0.0.1:1,,"} {
		if c, err := client.Dial(ctx, list); err == nil {
			c.Close()
			t.Errorf("Dial(%q) succeeded", list)
		}
	}
}

// GetTo and Put allocate nothing, with one server (the path a single
// server always had) and with three (routing views the key in place).
func TestOperationsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates by itself: allocation counts need a build without -race")
	}
	_, addrs := startServers(t, "tcp://127.0.0.1:0", shmListen(t, "b"), "tcp://127.0.0.1:0")
	for _, list := range [][]string{addrs[1:2], addrs} {
		c := dialAll(t, list)
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		k, v := []byte("alloc-key"), []byte("value")
		dst := make([]byte, 0, 64)
		var err error
		n := testing.AllocsPerRun(200, func() {
			if err == nil {
				err = c.Put(ctx, k, v, 0)
			}
			if err == nil {
				dst, err = c.GetTo(ctx, k, dst[:0])
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%d servers: Put+GetTo allocate %.1f times", len(list), n)
		}
	}
}

// A batch in flight when its server dies: Run and every operation the
// server did not answer fail with ErrUnavailable wrapping ErrConnLost, as
// a single operation does. (The operations used to carry the raw cause:
// ErrClosed, "client closed", for the connection the client retired, or
// the fabric's error; a chaos run of kills and restarts found it.)
func TestBatchInFlightServerDies(t *testing.T) {
	for _, fab := range []string{"tcp", "shm"} {
		t.Run(fab, func(t *testing.T) {
			procs, c := oneServer(t, fab, "s", key(0))
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			procs[0].Stop(t) // answers nothing from here
			var b client.Batch
			const n = 32
			for i := range n {
				b.Get(key(i))
			}
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx, &b) }()
			time.Sleep(100 * time.Millisecond) // the batch is in flight
			procs[0].Kill()
			lost := func(err error) bool {
				return errors.Is(err, client.ErrUnavailable) && errors.Is(err, client.ErrConnLost) && !errors.Is(err, client.ErrClosed)
			}
			select {
			case err := <-done:
				if !lost(err) {
					t.Fatalf("Run = %v; want ErrUnavailable wrapping ErrConnLost", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run still waiting 10 s after its server died")
			}
			for i := range n {
				if _, err := b.Result(i); !lost(err) {
					t.Errorf("operation %d: %v; want ErrUnavailable wrapping ErrConnLost", i, err)
				}
			}
		})
	}
}
