package kv

import (
	"runtime"
	"testing"

	"github.com/VictoriaMetrics/fastcache"
)

func benchSmall(b *testing.B, n int, mem int64, put bool) {
	var s *Store
	var p *Partition
	if mem < 4<<20 {
		var err error
		s, err = New(Config{Partitions: 1, Memory: mem, MaxValue: 256})
		if err != nil {
			b.Fatal(err)
		}
		p = s.Partition(0)
		var k [16]byte
		for i := range n {
			benchKey(k[:], uint64(i))
			p.Put(Hash(k[:]), k[:], benchValue(), 0)
		}
	} else {
		s, p = newBenchPartition(b, mem, n)
	}
	defer s.Close()
	var k [16]byte
	v := benchValue()
	dst := make([]byte, 64)
	r := rng(1)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := 1e18
	for range 20 {
		t := threadTime()
		for range 100000 {
			benchKey(k[:], r.next(uint64(n)))
			if put {
				p.Put(Hash(k[:]), k[:], v, 0)
			} else {
				p.Get(Hash(k[:]), k[:], dst)
			}
		}
		best = min(best, float64(threadTime()-t)/100000)
	}
	b.ReportMetric(best, "cpu-ns/op")
}

func BenchmarkSmallPut(b *testing.B) { benchSmall(b, 10000, 8<<20, true) }
func BenchmarkSmallGet(b *testing.B) { benchSmall(b, 10000, 8<<20, false) }
func BenchmarkBigPut(b *testing.B)   { benchSmall(b, 1000000, 256<<20, true) }
func BenchmarkBigGet(b *testing.B)   { benchSmall(b, 1000000, 256<<20, false) }
func BenchmarkTinyPut(b *testing.B) { benchSmall(b, 100, 8<<20, true) }
func BenchmarkTinyGet(b *testing.B) { benchSmall(b, 100, 8<<20, false) }
func BenchmarkCalib(b *testing.B) {
	var k [16]byte
	r := rng(1)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := 1e18
	var sink uint64
	for range 20 {
		t := threadTime()
		for range 100000 {
			benchKey(k[:], r.next(uint64(100)))
			sink += Hash(k[:])
		}
		best = min(best, float64(threadTime()-t)/100000)
	}
	b.ReportMetric(best, "cpu-ns/op")
	_ = sink
}

func BenchmarkTinyFastcachePut(b *testing.B) {
	c := fastcache.New(32 << 20)
	var k [16]byte
	v := benchValue()
	r := rng(1)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := 1e18
	for range 20 {
		t := threadTime()
		for range 100000 {
			benchKey(k[:], r.next(100))
			c.Set(k[:], v)
		}
		best = min(best, float64(threadTime()-t)/100000)
	}
	b.ReportMetric(best, "cpu-ns/op")
}

func BenchmarkL2Put(b *testing.B) { benchSmall(b, 100, 512<<10, true) }
func BenchmarkL2Get(b *testing.B) { benchSmall(b, 100, 512<<10, false) }
