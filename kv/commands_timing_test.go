package kv

import (
	"strconv"
	"testing"
)

// BenchmarkCommands times the memcached commands on a partition of 100 k
// items (16-byte keys, 32-byte values, uniform random keys, hash computed
// in the loop), beside Get and Put on the same partition for scale. Each
// must report 0 allocs/op.
func BenchmarkCommands(b *testing.B) {
	const items = 100_000
	s, p := newBenchPartition(b, 64<<20, items)
	defer s.Close()
	v := benchValue()
	dst := make([]byte, 1024)
	var k [benchKeyLen]byte
	// Counters: the first 1000 keys hold numbers.
	for i := range 1000 {
		benchKey(k[:], uint64(i))
		p.Put(Hash(k[:]), k[:], strconv.AppendUint(nil, uint64(i), 10), 0)
	}
	p.scratchOf(0) // allocated once, before the timing
	ops := map[string]func(h uint64, k []byte){
		"get":     func(h uint64, k []byte) { p.Get(h, k, dst) },
		"put":     func(h uint64, k []byte) { p.Put(h, k, v, 0) },
		"getitem": func(h uint64, k []byte) { p.GetItem(h, k, dst) },
		"set":     func(h uint64, k []byte) { p.Store(h, k, v, 0, 1, StoreSet, 0) },
		"replace": func(h uint64, k []byte) { p.Store(h, k, v, 0, 0, StoreReplace, 0) },
		"cas": func(h uint64, k []byte) {
			_, m, _ := p.GetItem(h, k, dst)
			p.Store(h, k, v, 0, 0, StoreSet, m.Version)
		},
		"touch": func(h uint64, k []byte) { p.Touch(h, k, 0) },
		"gat":   func(h uint64, k []byte) { p.GetAndTouch(h, k, dst, 0) },
	}
	for _, name := range []string{"get", "put", "getitem", "set", "replace", "cas", "touch", "gat"} {
		f := ops[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			r := rng(1)
			for b.Loop() {
				benchKey(k[:], r.next(items))
				f(Hash(k[:]), k[:])
			}
		})
	}
	b.Run("incr", func(b *testing.B) {
		b.ReportAllocs()
		r := rng(1)
		for b.Loop() {
			benchKey(k[:], r.next(1000))
			p.Incr(Hash(k[:]), k[:], 1, false, false, 0, 0, 0)
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		r := rng(1)
		for b.Loop() {
			benchKey(k[:], 1000+r.next(items-1000))
			h := Hash(k[:])
			p.Put(h, k[:], v[:8], 0) // keep values short
			p.Store(h, k[:], v[:8], 0, 0, StoreAppend, 0)
		}
	})
}
