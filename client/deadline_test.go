package client_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/server/servertest"
)

// TestShortDeadlines: six goroutines share a Client, half their
// operations (PUTs of up to 3.8 KB, GETs, batches) with deadlines of 1 to
// 300 µs, so callers give up at every step of an operation's way while
// the server answers. Every GET returns a value its goroutine could have
// stored or ErrNotFound only while none could be there; every error is
// the context's. Each fabric and mode runs for 1.5 s ($JAKIRO_DEADLINES
// runs each longer). A caller that gave up on a call completed at that
// moment once reused its waiter before the driver was through with it:
// its next GET returned an empty value and no error.
func TestShortDeadlines(t *testing.T) {
	d := 1500 * time.Millisecond
	if v := os.Getenv("JAKIRO_DEADLINES"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("JAKIRO_DEADLINES=%q: %v", v, err)
		}
	}
	deadline := func(r *rand.Rand) time.Duration {
		if r.IntN(2) == 0 {
			return time.Duration(1+r.IntN(300)) * time.Microsecond
		}
		return 2 * time.Second
	}
	allowed := func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }
	for _, fab := range []string{"tcp", "shm"} {
		listen := listenOn(t, fab, "deadlines")
		p := servertest.Start(t, listen)
		for _, mode := range []client.Mode{client.ModeRFP, client.ModeReply, client.ModeAuto} {
			t.Run(fab+"/"+mode.String(), func(t *testing.T) {
				c := dial(t, p.Addr, client.WithMode(mode))
				seed := uint64(time.Now().UnixNano())
				end := time.Now().Add(d)
				var wg sync.WaitGroup
				for g := range 6 {
					wg.Go(func() {
						w := newChaosWorker(seed, g+10*int(mode), false, allowed, deadline)
						for n := 0; n < 100 || time.Now().Before(end) && !t.Failed(); n++ {
							if _, _, err := w.step(c); err != nil {
								t.Errorf("seed %d: %v", seed, err)
								return
							}
						}
					})
				}
				wg.Wait()
			})
		}
	}
}

// Counters and appends from six goroutines sharing a Client, half with
// deadlines of 1 to 300 µs: every increment that succeeded returned a
// number no other did, and the final count lies between the increments
// that succeeded and those plus the ones that timed out (which may or may
// not have taken effect); every appended token that succeeded is in the
// final value once, one that timed out at most once, and nothing else is.
func TestCommandsShortDeadlines(t *testing.T) {
	for _, fab := range []string{"tcp", "shm"} {
		t.Run(fab, func(t *testing.T) {
			listen := listenOn(t, fab, "commands")
			c := dial(t, servertest.Start(t, listen).Addr)
			ctx := context.Background()
			ctr, log := []byte("counter"), []byte("log")
			if _, err := c.Set(ctx, ctr, []byte("0"), 0, 0); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Set(ctx, log, nil, 0, 0); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			seen := map[uint64]bool{}
			var incrOK, incrMaybe int
			tokens := map[string]int{} // 1: appended, 2: may have been
			end := time.Now().Add(1500 * time.Millisecond)
			var wg sync.WaitGroup
			for g := range 6 {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
					for n := 0; n < 200 || time.Now().Before(end); n++ {
						d := 2 * time.Second
						if r.IntN(2) == 0 {
							d = time.Duration(1+r.IntN(300)) * time.Microsecond
						}
						octx, cancel := context.WithTimeout(ctx, d)
						var err error
						if n%2 == 0 {
							var v uint64
							v, err = c.Incr(octx, ctr, 1)
							mu.Lock()
							switch {
							case err == nil && seen[v]:
								t.Errorf("increment returned %d twice", v)
							case err == nil:
								seen[v] = true
								incrOK++
							default:
								incrMaybe++
							}
							mu.Unlock()
						} else {
							tok := fmt.Sprintf("g%d.%d;", g, n)
							_, err = c.Append(octx, log, []byte(tok))
							if errors.Is(err, client.ErrTooLarge) {
								cancel() // the log is full: refused, not appended
								continue
							}
							mu.Lock()
							tokens[tok] = map[bool]int{true: 1, false: 2}[err == nil]
							mu.Unlock()
						}
						cancel()
						if err != nil && !errors.Is(err, context.DeadlineExceeded) {
							t.Errorf("%v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			v, err := c.Get(ctx, ctr)
			if err != nil {
				t.Fatal(err)
			}
			n, err := strconv.ParseUint(string(v), 10, 64)
			if err != nil || n < uint64(incrOK) || n > uint64(incrOK+incrMaybe) {
				t.Errorf("counter %q after %d increments that succeeded and %d that timed out", v, incrOK, incrMaybe)
			}
			l, err := c.Get(ctx, log)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, tok := range strings.SplitAfter(string(l), ";") {
				if tok != "" {
					got[tok]++
				}
			}
			for tok, k := range got {
				if tokens[tok] == 0 || k > 1 {
					t.Errorf("token %q in the log %d times; appended: %d (1 yes, 2 timed out, 0 never)", tok, k, tokens[tok])
				}
			}
			for tok, k := range tokens {
				if k == 1 && got[tok] != 1 {
					t.Errorf("token %q appended but %d times in the log", tok, got[tok])
				}
			}
			t.Logf("%d increments, %d timed out; log of %d bytes, %d tokens", incrOK, incrMaybe, len(l), len(got))
		})
	}
}

// TestParkedCallersSeeTheirDeadline: the server stops answering
// (SIGSTOP) while eight goroutines share a Client. The first drives with
// a long deadline; seven park behind it (a Batch's caller among them),
// each with a short deadline of its own. A parked caller waits for its
// token alone, and a driver whose own context is alive never hands the
// role on: it must wake each parked caller whose deadline passed, and
// every one returns the context's error long before the driver's.
func TestParkedCallersSeeTheirDeadline(t *testing.T) {
	for _, fab := range []string{"tcp", "shm"} {
		t.Run(fab, func(t *testing.T) {
			p := servertest.Start(t, listenOn(t, fab, "parked"))
			c := dial(t, p.Addr)
			if err := c.Put(context.Background(), []byte("k"), []byte("v"), 0); err != nil {
				t.Fatal(err)
			}
			p.Stop(t) // every thread stopped, not only signalled
			defer p.Signal(syscall.SIGCONT)
			const driverDeadline = time.Second
			get := func(g int, d time.Duration) {
				ctx, cancel := context.WithTimeout(context.Background(), d)
				defer cancel()
				start := time.Now()
				var err error
				if g == 3 {
					var b client.Batch
					b.Get([]byte("k"))
					b.Get([]byte("k2"))
					err = c.Run(ctx, &b)
				} else {
					_, err = c.Get(ctx, []byte("k"))
				}
				if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || g > 0 && took > driverDeadline/2 {
					t.Errorf("caller %d (deadline %v): %v after %v", g, d, err, took)
				}
			}
			var wg sync.WaitGroup
			wg.Go(func() { get(0, driverDeadline) })
			time.Sleep(20 * time.Millisecond) // caller 0 holds the driver role
			for g := 1; g < 8; g++ {
				wg.Go(func() { get(g, time.Duration(5+10*g)*time.Millisecond) })
			}
			wg.Wait()
		})
	}
}

// TestQueuedCallersSeeTheirDeadline: as TestParkedCallersSeeTheirDeadline,
// but with more callers than the rings hold, so calls wait in the
// connection's queue: forty under contexts that never end
// (context.Background, as go-ycsb's), which the driver skips, then ten
// with short deadlines, which it must still find there and wake. Once
// the server runs again, the forty get their answers.
func TestQueuedCallersSeeTheirDeadline(t *testing.T) {
	for _, fab := range []string{"tcp", "shm"} {
		t.Run(fab, func(t *testing.T) {
			p := servertest.Start(t, listenOn(t, fab, "queued"))
			c := dial(t, p.Addr)
			if err := c.Put(context.Background(), []byte("k"), []byte("v"), 0); err != nil {
				t.Fatal(err)
			}
			p.Stop(t)
			const driverDeadline = 2 * time.Second
			// Resumed once every caller with a deadline returned, or
			// at the latest 1 s past the driver's deadline: a queued
			// caller never woken fails the test rather than hang it.
			resume := sync.OnceFunc(func() { p.Signal(syscall.SIGCONT) })
			defer resume()
			time.AfterFunc(driverDeadline+time.Second, resume)
			var ended, waiting sync.WaitGroup
			ended.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), driverDeadline)
				defer cancel()
				if _, err := c.Get(ctx, []byte("k")); !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("driver: %v", err)
				}
			})
			time.Sleep(20 * time.Millisecond) // the driver holds the role
			for g := range 40 {
				waiting.Go(func() {
					if v, err := c.Get(context.Background(), []byte("k")); err != nil || string(v) != "v" {
						t.Errorf("caller %d without a deadline: %q, %v", g, v, err)
					}
				})
			}
			time.Sleep(20 * time.Millisecond) // their calls fill the rings and queue
			for g := range 10 {
				ended.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(5+5*g)*time.Millisecond)
					defer cancel()
					start := time.Now()
					_, err := c.Get(ctx, []byte("k"))
					if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > driverDeadline/2 {
						t.Errorf("queued caller %d: %v after %v", g, err, took)
					}
				})
			}
			ended.Wait()
			resume()
			waiting.Wait()
		})
	}
}
