package kv

import (
	"fmt"
	"testing"
)

// BenchmarkAccessTimes is BenchmarkGet's and BenchmarkPut's workload on
// Jakiro alone, with Config.AccessTimes off and on (the store's real
// coarse clock: a read stamps an item at most once a second), so the
// cost of keeping memcached's last access time reads in one run.
func BenchmarkAccessTimes(b *testing.B) {
	for _, atimes := range []bool{false, true} {
		s, err := New(Config{Partitions: 1, Memory: benchMemory, AccessTimes: atimes})
		if err != nil {
			b.Fatal(err)
		}
		p := s.Partition(0)
		var k [benchKeyLen]byte
		v := benchValue()
		for i := range benchItems {
			benchKey(k[:], uint64(i))
			if st := p.Put(Hash(k[:]), k[:], v, 0); st != StatusOK {
				b.Fatalf("put %d: %v", i, st)
			}
		}
		if st := p.Stats(); st.Items != benchItems { // Stats settles pending slots
			b.Fatalf("%d items put, %d held", benchItems, st.Items)
		}
		dst := make([]byte, 64)
		for _, op := range []string{"get", "put"} {
			b.Run(fmt.Sprintf("atimes=%v/op=%s", atimes, op), func(b *testing.B) {
				r := rng(1)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					benchKey(k[:], r.next(benchItems))
					h := Hash(k[:])
					if op == "get" {
						if _, st := p.Get(h, k[:], dst); st != StatusOK {
							b.Fatal("miss")
						}
					} else if p.Put(h, k[:], v, 0) != StatusOK {
						b.Fatal("put")
					}
				}
			})
		}
		s.Close()
	}
}
