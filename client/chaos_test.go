package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/server/servertest"
)

// chaosDuration is how long TestChaos runs; $JAKIRO_CHAOS (a Go
// duration) runs it longer.
func chaosDuration(t *testing.T) time.Duration {
	if v := os.Getenv("JAKIRO_CHAOS"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("JAKIRO_CHAOS=%q: %v", v, err)
		}
		return d
	}
	return 6 * time.Second
}

// TestChaos: one Client over three servers (two tcp, one shm) used by
// four goroutines (PUTs of values up to 3.8 KB, GETs, batches of GETs over
// every server) while, every 300-800 ms, a server is killed and restarted
// on its address or stopped (SIGSTOP) for up to 1.5 s. Every operation
// ends within its deadline (2 s, plus 1 s of slack) with a value its
// goroutine could have stored, ErrNotFound (a restart empties a server),
// or the errors a broken or unanswering server gives: ErrUnavailable,
// ErrConnLost, the context's deadline. Nothing else: no stale or torn
// value, no ErrClosed. Afterwards every server serves again.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts servers for seconds: not in -short")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	procs, addrs := startServers(t, "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", shmListen(t, "chaos"))
	c := dialAll(t, addrs)
	end := time.Now().Add(chaosDuration(t))

	stopChaos := make(chan struct{})
	chaosDone := make(chan struct{})
	var kills, stops int
	go func() {
		defer close(chaosDone)
		r := rand.New(rand.NewPCG(seed, 1))
		for {
			select {
			case <-stopChaos:
				return
			case <-time.After(time.Duration(300+r.IntN(500)) * time.Millisecond):
			}
			i := r.IntN(len(procs))
			if r.IntN(3) == 0 {
				procs[i].Signal(syscall.SIGSTOP)
				time.Sleep(time.Duration(200+r.IntN(1300)) * time.Millisecond)
				procs[i].Signal(syscall.SIGCONT)
				stops++
				continue
			}
			procs[i].Kill()
			time.Sleep(time.Duration(50+r.IntN(400)) * time.Millisecond)
			procs[i] = servertest.Start(t, addrs[i])
			kills++
		}
	}()

	const workers = 4
	var progress [workers]atomic.Int64
	var ops, failed, absent atomic.Int64
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newChaosWorker(seed, g, true, chaosAllowed, func(*rand.Rand) time.Duration { return 2 * time.Second })
			for time.Now().Before(end) && !t.Failed() {
				progress[g].Store(time.Now().UnixNano())
				f, a, err := w.step(c)
				if err != nil {
					t.Error(err)
				}
				failed.Add(int64(f))
				absent.Add(int64(a))
				ops.Add(1)
			}
		}()
	}
	watchdog := time.AfterFunc(time.Until(end)+20*time.Second, func() {
		var sb strings.Builder
		pprof.Lookup("goroutine").WriteTo(&sb, 1)
		fmt.Fprintf(os.Stderr, "TestChaos: workers still busy 20 s after the end:\n%s", sb.String())
		panic("TestChaos: an operation hangs")
	})
	wg.Wait()
	watchdog.Stop()
	close(stopChaos)
	<-chaosDone
	t.Logf("%d operations: %d failed as a broken or stopped server's may, %d found absent; %d kills, %d stops",
		ops.Load(), failed.Load(), absent.Load(), kills, stops)
	if ops.Load() < workers*100 {
		t.Errorf("only %d operations in the run", ops.Load())
	}

	// Every server up again: each serves its keys within recoverBy.
	for i := range 300 {
		k := fmt.Appendf(nil, "after-%d", i)
		start := time.Now()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := c.Put(ctx, k, []byte("v"), 0)
			cancel()
			if err == nil {
				break
			}
			if time.Since(start) > recoverBy+2*time.Second {
				t.Fatalf("after the chaos, %s on %s: %v", k, c.ServerFor(k), err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// chaosWorker drives one goroutine's keys and knows, for each, the
// values a GET may return: after a successful PUT that value (or none,
// where a restart may have emptied the server: vanish); a PUT that failed
// adds its value to the possible ones (it may or may not have taken
// effect). allowed says which errors an operation may end with, deadline
// draws each operation's.
type chaosWorker struct {
	r        *rand.Rand
	keys     [][]byte
	possible map[string][][]byte // nil element: absent
	seq      int
	vanish   bool
	allowed  func(error) bool
	deadline func(*rand.Rand) time.Duration
}

func newChaosWorker(seed uint64, g int, vanish bool, allowed func(error) bool, deadline func(*rand.Rand) time.Duration) *chaosWorker {
	w := &chaosWorker{r: rand.New(rand.NewPCG(seed, uint64(g)+2)), possible: map[string][][]byte{},
		vanish: vanish, allowed: allowed, deadline: deadline}
	for i := range 48 {
		k := fmt.Appendf(nil, "chaos-%d-%02d", g, i)
		w.keys = append(w.keys, k)
		w.possible[string(k)] = [][]byte{nil}
	}
	return w
}

// chaosAllowed: the errors of a server that broke, restarts or does not answer.
func chaosAllowed(err error) bool {
	return !errors.Is(err, client.ErrClosed) && (errors.Is(err, client.ErrUnavailable) ||
		errors.Is(err, client.ErrConnLost) || errors.Is(err, context.DeadlineExceeded))
}

// may reports whether k may hold v (nil: absent).
func (w *chaosWorker) may(k, v []byte) bool {
	for _, p := range w.possible[string(k)] {
		if (p == nil) == (v == nil) && bytes.Equal(p, v) {
			return true
		}
	}
	return false
}

// got checks one GET's outcome; it counts a failure or an absence.
func (w *chaosWorker) got(k, v []byte, err error) (failed, absent int, bad error) {
	switch {
	case err == nil:
		if !w.may(k, v) {
			return 0, 0, fmt.Errorf("GET %s = %.48q: not a value it may hold (%d possible)", k, v, len(w.possible[string(k)]))
		}
	case errors.Is(err, client.ErrNotFound):
		if !w.may(k, nil) {
			return 0, 1, fmt.Errorf("GET %s: not found, but it cannot be absent", k)
		}
		return 0, 1, nil
	case w.allowed(err):
		return 1, 0, nil
	default:
		return 0, 0, fmt.Errorf("GET %s: %v", k, err)
	}
	return 0, 0, nil
}

// step runs one operation (PUT, GET or a batch of six GETs) and checks it.
func (w *chaosWorker) step(c *client.Client) (failed, absent int, bad error) {
	deadline := w.deadline(w.r)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	defer func() {
		if d := time.Since(start); d > deadline+time.Second && bad == nil {
			bad = fmt.Errorf("an operation with a %v deadline took %v", deadline, d)
		}
	}()
	k := w.keys[w.r.IntN(len(w.keys))]
	switch x := w.r.IntN(10); {
	case x < 4:
		w.seq++
		v := fmt.Appendf(nil, "%s=%d|%s", k, w.seq, bytes.Repeat([]byte{'x'}, w.r.IntN(3)*w.r.IntN(1900)))
		switch err := c.Put(ctx, k, v, 0); {
		case err == nil && w.vanish:
			w.possible[string(k)] = [][]byte{v, nil}
		case err == nil:
			w.possible[string(k)] = [][]byte{v}
		case w.allowed(err):
			w.possible[string(k)] = append(w.possible[string(k)], v)
			return 1, 0, nil
		default:
			return 0, 0, fmt.Errorf("PUT %s: %v", k, err)
		}
	case x < 8:
		v, err := c.Get(ctx, k)
		return w.got(k, v, err)
	default:
		var b client.Batch
		var ks [6][]byte
		for j := range ks {
			ks[j] = w.keys[w.r.IntN(len(w.keys))]
			b.Get(ks[j])
		}
		if err := c.Run(ctx, &b); err != nil && !w.allowed(err) {
			return 0, 0, fmt.Errorf("batch: Run = %v", err)
		}
		for j, k := range ks {
			v, err := b.Result(j)
			f, a, bad := w.got(k, v, err)
			if bad != nil {
				return failed, absent, fmt.Errorf("batch: %w", bad)
			}
			failed, absent = failed+f, absent+a
		}
	}
	return failed, absent, nil
}
