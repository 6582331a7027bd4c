package kv

import "testing"

// TestSplitFollowsItemSize: the index's share of Memory follows
// AvgItemSize (about two 9-byte slots per expected item), index and log
// together stay within Memory, and the log is what a Store gets.
func TestSplitFollowsItemSize(t *testing.T) {
	const mem = 64 << 20
	share := map[int]float64{}
	for _, avg := range []int{8, 48, 200, 1024, 4096} {
		c := Config{Partitions: 2, Memory: mem, MaxValue: 4096, AvgItemSize: avg}
		idx, log, err := c.Split()
		if err != nil {
			t.Fatal(err)
		}
		if idx+log > mem {
			t.Fatalf("item size %d: index %d + log %d over the %d budget", avg, idx, log, int64(mem))
		}
		share[avg] = float64(idx) / mem
		s, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		var capacity uint64
		for i := range s.NumPartitions() {
			capacity += s.Partition(i).Stats().Capacity
		}
		s.Close()
		if overhang := int64(2 * (maxHeader + MaxKeyLen + 4096)); int64(capacity)+overhang != log {
			t.Fatalf("item size %d: Split says log %d, the store has capacity %d + overhang %d", avg, log, capacity, overhang)
		}
	}
	// 48 B items: the index is about a quarter (18.3 of 18.3+51 bytes).
	if s := share[48]; s < 0.24 || s > 0.28 {
		t.Fatalf("48 B items: index share %.3f, want about 0.26", s)
	}
	for _, pair := range [][2]int{{8, 48}, {48, 200}, {200, 1024}, {1024, 4096}} {
		if share[pair[0]] <= share[pair[1]] {
			t.Fatalf("index share %.4f for %d B items is not above %.4f for %d B", share[pair[0]], pair[0], share[pair[1]], pair[1])
		}
	}
	if share[4096] > 0.01 {
		t.Fatalf("4 KiB items: index share %.4f, want under 1%%", share[4096])
	}
	if _, _, err := (Config{Memory: 1 << 10}).Split(); err == nil {
		t.Fatal("Split of a too small budget: no error")
	}
}
