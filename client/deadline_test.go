package client_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"sync"
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
		listen := "tcp://127.0.0.1:0"
		if fab == "shm" {
			listen = shmListen(t, "deadlines")
		}
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
