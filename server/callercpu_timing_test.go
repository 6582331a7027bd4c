package server_test

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
)

// BenchmarkCallerCPU: what a Get costs its caller's process in CPU beyond
// the caller's own work, as `jakiro-bench compare` asks of go-ycsb (its
// client µs/op against the no-op database's), measured in one process in
// turns so that both sides see the same machine: a comparison of two runs
// mostly measures where the host put the vCPUs (±30% here), turns of one
// run agree within a few percent. 4 and 64 goroutines share one Client at
// its defaults against a one-partition shm server, each in a loop of
// go-ycsb-shaped work (a zipfian key number, its name formatted, a
// one-field record map) and a Get; in the no-op turns the same goroutines
// do the work alone. Reports the process's CPU per operation in both
// (cpu-µs/op, noop-cpu-µs/op), their difference (extra-µs/op), and the
// throughput of both and their ratio (x-noop). The work here is lighter
// than go-ycsb's (about 0.45 against 1.2 µs of CPU on the 2-vCPU AMD VM),
// so x-noop reads lower than compare's vs_noop; extra-µs/op is the number
// to set beside compare's client µs/op over the no-op's. ns/op is the Get
// turns' wall time per Get, over all goroutines.
func BenchmarkCallerCPU(b *testing.B) {
	srv := startServer(b, e2eListenTB(b, "shm"), "JAKIRO_E2E_PARTITIONS=1")
	for _, g := range []int{4, 64} {
		b.Run(fmt.Sprintf("callers%d", g), func(b *testing.B) { callerCPU(b, srv.Addr, g) })
	}
}

// callerTurn is how long one turn measures, after callerSettle for the
// calls of the other turn to end.
const (
	callerTurn   = 50 * time.Millisecond
	callerSettle = 5 * time.Millisecond
)

func callerCPU(b *testing.B, addr string, callers int) {
	ctx := context.Background()
	c, err := client.Dial(ctx, addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	keys := loadKeys(b, c, 10000)
	var gets, stop atomic.Bool
	var ops atomic.Int64
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			z := rand.NewZipf(rand.New(rand.NewSource(seed)), 1.01, 1, uint64(len(keys)-1))
			var dst []byte
			for !stop.Load() {
				k := z.Uint64()
				rec := map[string][]byte{"field0": []byte(fmt.Sprintf("k%015d", k))}
				if gets.Load() {
					var err error
					if dst, err = c.GetTo(ctx, keys[k], dst[:0]); err != nil {
						errs <- err
						return
					}
				}
				if len(rec) == 1 {
					ops.Add(1)
				}
			}
		}(int64(i))
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	// turn runs one turn with or without Gets: operations, CPU, wall.
	turn := func(withGets bool) (int64, time.Duration, time.Duration) {
		gets.Store(withGets)
		time.Sleep(callerSettle)
		o, c0, t0 := ops.Load(), cpu(), time.Now()
		time.Sleep(callerTurn)
		return ops.Load() - o, cpu() - c0, time.Since(t0)
	}
	var getOps, noopOps int64
	var getCPU, noopCPU, getWall, noopWall time.Duration
	b.ResetTimer()
	for getOps < int64(b.N) {
		b.StartTimer()
		n, cp, w := turn(true)
		b.StopTimer()
		getOps, getCPU, getWall = getOps+n, getCPU+cp, getWall+w
		n, cp, w = turn(false)
		noopOps, noopCPU, noopWall = noopOps+n, noopCPU+cp, noopWall+w
		select {
		case err := <-errs:
			b.Fatal(err)
		default:
		}
	}
	perOp := func(d time.Duration, n int64) float64 { return float64(d.Nanoseconds()) / float64(max(n, 1)) / 1e3 }
	rate := func(n int64, d time.Duration) float64 { return float64(n) / d.Seconds() / 1e6 }
	b.ReportMetric(perOp(getCPU, getOps), "cpu-µs/op")
	b.ReportMetric(perOp(noopCPU, noopOps), "noop-cpu-µs/op")
	b.ReportMetric(perOp(getCPU, getOps)-perOp(noopCPU, noopOps), "extra-µs/op")
	b.ReportMetric(rate(getOps, getWall), "Mops")
	b.ReportMetric(rate(noopOps, noopWall), "noop-Mops")
	b.ReportMetric(rate(getOps, getWall)/rate(noopOps, noopWall), "x-noop")
}
