package shm_test

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkCoreToCore is the floor under every shm round trip: a cache
// line handed from one core to another and back (two threads pinned to
// the first two CPUs this process may use, each spinning on the line for
// its turn). ns/op is one round trip. An shm GET moves a few such lines
// each way (the request, the answer), so its latency follows this number;
// on a VM it moves as the host places the vCPUs: on the 2-vCPU AMD VM,
// 60 one-second samples read ~65 ns (SMT siblings), ~90-140 ns (cores
// sharing an L3) and ~390-510 ns (apart), changing within seconds. Run it
// with -count to see a machine's spread.
func BenchmarkCoreToCore(b *testing.B) {
	cpus, err := twoCPUs()
	if err != nil {
		b.Skipf("skipped: %v", err)
	}
	var line struct {
		_    [64]byte
		ball atomic.Int64
		_    [64]byte
	}
	pinned := make(chan error, 1)
	go func() {
		if err := lockTo(cpus[1]); err != nil {
			pinned <- err
			return
		}
		pinned <- nil
		for {
			v := line.ball.Load()
			if v < 0 {
				return
			}
			if v&1 == 1 {
				line.ball.Store(v + 1)
			}
		}
	}()
	if err := <-pinned; err != nil {
		b.Fatalf("pinning to CPU %d: %v", cpus[1], err)
	}
	defer line.ball.Store(-1)
	done := make(chan error, 1)
	go func() {
		if err := lockTo(cpus[0]); err != nil {
			done <- err
			return
		}
		b.ResetTimer()
		for i := int64(0); i < int64(b.N); i++ {
			line.ball.Store(2*i + 1)
			for line.ball.Load() != 2*i+2 {
			}
		}
		b.StopTimer()
		done <- nil
	}()
	if err := <-done; err != nil {
		b.Fatalf("pinning to CPU %d: %v", cpus[0], err)
	}
}

// twoCPUs returns the first two CPUs of this process's affinity mask.
func twoCPUs() ([2]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return [2]int{}, err
	}
	var out [2]int
	n := 0
	for c := 0; c < 1024 && n < 2; c++ {
		if set.IsSet(c) {
			out[n] = c
			n++
		}
	}
	if n < 2 {
		return out, errOneCPU
	}
	return out, nil
}

var errOneCPU = errors.New("this process may run on one CPU only: no second core to hand a line to")

// lockTo locks the calling goroutine to its thread and binds the thread
// to cpu. The thread stays locked: it exits with the goroutine, pinned.
func lockTo(cpu int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(0, &set)
}
