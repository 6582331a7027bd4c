package kv

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/internal/bytesize"
)

// newTestStore makes a one-partition store with a settable clock.
func newTestStore(t testing.TB, cfg Config) (*Partition, *uint32) {
	t.Helper()
	clock := new(uint32)
	*clock = 1000
	if cfg.Now == nil {
		cfg.Now = func() uint32 { return *clock }
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = 1
	}
	if cfg.Memory == 0 {
		cfg.Memory = 256 << 10
	}
	if cfg.MaxValue == 0 {
		cfg.MaxValue = 8 << 10
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Partition(0), clock
}

func put(t testing.TB, p *Partition, key, val string, ttl uint32) {
	t.Helper()
	if st := p.Put(p.hashFn([]byte(key)), []byte(key), []byte(val), ttl); st != StatusOK {
		t.Fatalf("put %q: %v", key, st)
	}
}

// get returns the value, or "" and false on a miss.
func get(t testing.TB, p *Partition, key string) (string, bool) {
	t.Helper()
	dst := make([]byte, 64<<10)
	n, st := p.Get(p.hashFn([]byte(key)), []byte(key), dst)
	switch st {
	case StatusOK:
		return string(dst[:n]), true
	case StatusNotFound:
		return "", false
	}
	t.Fatalf("get %q: %v", key, st)
	return "", false
}

func mustCheck(t testing.TB, p *Partition) {
	t.Helper()
	if err := p.check(); err != nil {
		t.Fatal(err)
	}
}

func TestStatusAndModeStrings(t *testing.T) {
	want := map[Status]string{StatusOK: "ok", StatusNotFound: "not found", StatusTooLarge: "too large",
		StatusNoMemory: "out of memory", StatusBadKey: "bad key", Status(99): "status(99)"}
	for s, w := range want {
		if s.String() != w {
			t.Errorf("%d: %q, want %q", s, s.String(), w)
		}
	}
	if ModeCache.String() != "cache" || ModeStore.String() != "store" || Mode(5).String() != "mode(5)" {
		t.Error("Mode.String")
	}
	if StatusOK != 0 || ModeCache != 0 {
		t.Error("zero values must be StatusOK and ModeCache")
	}
}

func TestNewRejectsNonsense(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Partitions: -1}, "Partitions"},
		{Config{Partitions: MaxPartitions + 1}, "Partitions"},
		{Config{Memory: -5}, "negative"},
		{Config{MaxValue: -1}, "MaxValue"},
		{Config{MaxValue: MaxMaxValue + 1}, "MaxValue"},
		{Config{Mode: 2}, "Mode"},
		{Config{AvgItemSize: -1}, "AvgItemSize"},
		{Config{Memory: 1 << 20}, "too small"},
		{Config{Memory: 64 << 20, Partitions: 64}, "too small"},
		{Config{Memory: 8 << 20, MaxValue: 4 << 20, Partitions: 1}, "raise Memory or lower MaxValue"},
	}
	for _, c := range cases {
		s, err := New(c.cfg)
		if err == nil {
			s.Close()
			t.Errorf("New(%+v) succeeded, want an error about %s", c.cfg, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): %v, want it to mention %q", c.cfg, err, c.want)
		}
	}
}

func TestMinimumMemory(t *testing.T) {
	for _, mv := range []int{1, 1000, 64 << 10, 1 << 20} {
		for _, avg := range []int{1, 48, 1000, 1 << 20} {
			c, _ := Config{Partitions: 2, MaxValue: mv, AvgItemSize: avg}.normalize()
			min := int64(c.minPartition())
			c.Memory = 2 * min
			if _, err := c.layout(); err != nil {
				t.Errorf("MaxValue %d, AvgItemSize %d: the stated minimum %d fails: %v", mv, avg, min, err)
			}
			c.Memory = 2 * (min - 1)
			if _, err := c.layout(); err == nil {
				t.Errorf("MaxValue %d, AvgItemSize %d: less than the minimum %d works", mv, avg, min)
			}
		}
	}
}

func TestDefaults(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cfg := s.Config()
	if s.NumPartitions() != 4 || cfg.Memory != 1<<30 || cfg.MaxValue != 1<<20 || cfg.Mode != ModeCache {
		t.Fatalf("defaults: %d partitions, %+v", s.NumPartitions(), cfg)
	}
	var capacity uint64
	for i := range s.NumPartitions() {
		capacity += s.Partition(i).Stats().Capacity
	}
	if capacity < 700<<20 || capacity > 1<<30 {
		t.Errorf("log capacity %s of a 1GiB budget", bytesize.Format(int64(capacity)))
	}
	if now := s.Now(); int64(now) < time.Now().Unix()-2 || int64(now) > time.Now().Unix()+2 {
		t.Errorf("coarse clock says %d, time.Now %d", now, time.Now().Unix())
	}
	// Any key works through the store.
	key := []byte("hello")
	h := Hash(key)
	p := s.Partition(s.PartitionOf(h))
	if p.Put(h, key, []byte("world"), 0) != StatusOK {
		t.Fatal("put")
	}
	dst := make([]byte, 10)
	if n, st := p.Get(h, key, dst); st != StatusOK || string(dst[:n]) != "world" {
		t.Fatalf("get: %v %q", st, dst[:n])
	}
}

func TestCoarseClockStops(t *testing.T) {
	users := func() int {
		coarse.mu.Lock()
		defer coarse.mu.Unlock()
		return coarse.users
	}
	before := users()
	a, _ := New(Config{Memory: 16 << 20, Partitions: 1})
	b, _ := New(Config{Memory: 16 << 20, Partitions: 1})
	c, _ := New(Config{Memory: 16 << 20, Partitions: 1, Now: func() uint32 { return 7 }})
	if users() != before+2 {
		t.Fatalf("users %d, want %d", users(), before+2)
	}
	if c.Now() != 7 {
		t.Error("injected clock ignored")
	}
	a.Close()
	a.Close() // twice is fine
	b.Close()
	c.Close()
	if users() != before {
		t.Fatalf("users %d after Close, want %d", users(), before)
	}
}

func TestPartitionOf(t *testing.T) {
	for _, n := range []int{1, 3, 4, 7, 64, 1000} {
		s := &Store{cfg: Config{Partitions: n}}
		counts := make([]int, n)
		keys := max(200000, 2000*n)
		for i := range keys {
			h := Hash(fmt.Appendf(nil, "key-%d", i))
			pi := s.PartitionOf(h)
			counts[pi]++
			// Bucket bits (0..31) and tag bits (48..63) do not matter.
			if s.PartitionOf(h^0xffff_0000_ffff_ffff) != pi {
				t.Fatalf("PartitionOf depends on bucket or tag bits")
			}
		}
		for i, c := range counts {
			want := keys / n
			if c < want*85/100 || c > want*115/100 {
				t.Errorf("%d partitions: partition %d has %d keys, want about %d", n, i, c, want)
			}
		}
	}
}

func TestLimits(t *testing.T) {
	p, _ := newTestStore(t, Config{MaxValue: 1000})
	for _, n := range []int{0, MaxKeyLen + 1, 1000} {
		key := bytes.Repeat([]byte{'k'}, n)
		if st := p.Put(Hash(key), key, []byte("v"), 0); st != StatusBadKey {
			t.Errorf("put key of %d bytes: %v", n, st)
		}
		if _, st := p.Get(Hash(key), key, make([]byte, 10)); st != StatusBadKey {
			t.Errorf("get key of %d bytes: %v", n, st)
		}
		if st := p.Delete(Hash(key), key); st != StatusBadKey {
			t.Errorf("delete key of %d bytes: %v", n, st)
		}
	}
	if st := p.Put(Hash(nil), nil, []byte("v"), 0); st != StatusBadKey {
		t.Errorf("nil key: %v", st)
	}
	long := bytes.Repeat([]byte{'K'}, MaxKeyLen)
	put(t, p, string(long), "max key", 0)
	if v, ok := get(t, p, string(long)); !ok || v != "max key" {
		t.Errorf("250-byte key: %q %v", v, ok)
	}
	put(t, p, "big", strings.Repeat("x", 1000), 0)
	if st := p.Put(Hash([]byte("big")), []byte("big"), make([]byte, 1001), 0); st != StatusTooLarge {
		t.Errorf("value over MaxValue: %v", st)
	}
	if v, _ := get(t, p, "big"); len(v) != 1000 {
		t.Errorf("a refused put changed the value")
	}
	// A short dst gets the length and no bytes.
	dst := bytes.Repeat([]byte{'#'}, 999)
	n, st := p.Get(Hash([]byte("big")), []byte("big"), dst)
	if st != StatusTooLarge || n != 1000 || bytes.Count(dst, []byte{'#'}) != 999 {
		t.Errorf("short dst: n=%d %v", n, st)
	}
	// Empty values are values.
	put(t, p, "empty", "", 0)
	if v, ok := get(t, p, "empty"); !ok || v != "" {
		t.Errorf("empty value: %q %v", v, ok)
	}
	if n, st := p.Get(Hash([]byte("empty")), []byte("empty"), nil); st != StatusOK || n != 0 {
		t.Errorf("empty value, nil dst: %d %v", n, st)
	}
	mustCheck(t, p)
}

func TestOverwrite(t *testing.T) {
	p, _ := newTestStore(t, Config{MaxValue: 40000})
	// Sizes around the value-length encoding's boundaries.
	for _, n := range []int{0, 1, 63, 64, 100, 8191, 8192, 1000, 32, 39999, 5} {
		val := strings.Repeat(string(rune('a'+n%26)), n)
		put(t, p, "key", val, 0)
		if v, ok := get(t, p, "key"); !ok || v != val {
			t.Fatalf("after put of %d bytes: got %d bytes, %v", n, len(v), ok)
		}
		st := p.Stats()
		if st.Items != 1 || st.Bytes != itemSize(3, n, false, meta{}) {
			t.Fatalf("after put of %d bytes: %d items, %d bytes, want 1, %d", n, st.Items, st.Bytes, itemSize(3, n, false, meta{}))
		}
		mustCheck(t, p)
	}
}

func TestDelete(t *testing.T) {
	p, _ := newTestStore(t, Config{})
	put(t, p, "a", "1", 0)
	put(t, p, "b", "2", 0)
	if st := p.Delete(Hash([]byte("a")), []byte("a")); st != StatusOK {
		t.Fatalf("delete: %v", st)
	}
	if _, ok := get(t, p, "a"); ok {
		t.Fatal("deleted key found")
	}
	if st := p.Delete(Hash([]byte("a")), []byte("a")); st != StatusNotFound {
		t.Fatalf("second delete: %v", st)
	}
	if st := p.Delete(Hash([]byte("zz")), []byte("zz")); st != StatusNotFound {
		t.Fatalf("delete of a never-stored key: %v", st)
	}
	if v, ok := get(t, p, "b"); !ok || v != "2" {
		t.Fatal("delete hit the wrong key")
	}
	put(t, p, "a", "3", 0)
	if v, _ := get(t, p, "a"); v != "3" {
		t.Fatal("put after delete")
	}
	st := p.Stats()
	if st.Items != 2 || st.Deletes != 1 || st.Puts != 3 {
		t.Errorf("stats %+v", st)
	}
	mustCheck(t, p)
}

func TestTTL(t *testing.T) {
	p, clock := newTestStore(t, Config{})
	put(t, p, "t", "expiring", 10) // expires at 1010
	put(t, p, "forever", "stays", 0)
	put(t, p, "far", "far", math.MaxUint32) // saturates, never expires in practice
	*clock = 1009
	if v, ok := get(t, p, "t"); !ok || v != "expiring" {
		t.Fatal("expired early")
	}
	*clock = 1010
	if _, ok := get(t, p, "t"); ok {
		t.Fatal("not expired at its expiry time")
	}
	if st := p.Stats(); st.Expired != 1 || st.Items != 2 {
		t.Fatalf("after expiry: %+v", st)
	}
	// Delete of an expired key is not found, and counts as expired.
	put(t, p, "t2", "x", 5)
	*clock = 2000
	if st := p.Delete(Hash([]byte("t2")), []byte("t2")); st != StatusNotFound {
		t.Fatalf("delete of an expired key: %v", st)
	}
	// Overwriting changes the TTL both ways.
	put(t, p, "t3", "x", 5)
	put(t, p, "t3", "y", 0)
	put(t, p, "t4", "x", 0)
	put(t, p, "t4", "y", 5)
	*clock = 3000
	if v, ok := get(t, p, "t3"); !ok || v != "y" {
		t.Fatal("TTL survived an overwrite without TTL")
	}
	if _, ok := get(t, p, "t4"); ok {
		t.Fatal("TTL of an overwrite ignored")
	}
	for _, k := range []string{"forever", "far"} {
		if _, ok := get(t, p, k); !ok {
			t.Fatalf("%s expired", k)
		}
	}
	st := p.Stats()
	if st.Expired != 3 {
		t.Errorf("expired %d, want 3", st.Expired)
	}
	mustCheck(t, p)
}

func TestTTLExpiredAtHeadCountsAsExpired(t *testing.T) {
	p, clock := newTestStore(t, Config{})
	for i := range 100 {
		put(t, p, fmt.Sprint("ttl", i), "v", 1)
	}
	*clock += 5
	val := strings.Repeat("x", 200)
	for i := 0; p.tail < 4*p.cap; i++ {
		put(t, p, fmt.Sprint("filler", i), val, 0)
	}
	st := p.Stats()
	if st.Expired != 100 {
		t.Errorf("%d expired, want 100 (evictions %d)", st.Expired, st.Evictions)
	}
}

func TestWrapAround(t *testing.T) {
	p, _ := newTestStore(t, Config{Memory: 128 << 10, MaxValue: 1024})
	val := func(i int) string { return fmt.Sprintf("value-%d-%s", i, strings.Repeat("v", i%200)) }
	n := 0
	for ; p.tail < 10*p.cap; n++ {
		put(t, p, fmt.Sprint("key", n), val(n), 0)
		if n%97 == 0 {
			mustCheck(t, p)
		}
	}
	st := p.Stats()
	if st.Evictions == 0 || st.Items+st.Evictions != uint64(n) {
		t.Fatalf("%d puts of distinct keys: %d items + %d evictions", n, st.Items, st.Evictions)
	}
	// The newest items are there, the oldest gone; nothing is wrong.
	hits := 0
	for i := range n {
		v, ok := get(t, p, fmt.Sprint("key", i))
		if ok {
			hits++
			if v != val(i) {
				t.Fatalf("key%d: wrong value %q", i, v)
			}
		}
		if i < n/2 && ok {
			t.Fatalf("key%d survived five log rotations", i)
		}
		if i >= n-10 && !ok {
			t.Fatalf("key%d, among the last put, is missing", i)
		}
	}
	if uint64(hits) != st.Items {
		t.Errorf("%d keys found, %d items", hits, st.Items)
	}
	mustCheck(t, p)
}

func TestStoreMode(t *testing.T) {
	p, _ := newTestStore(t, Config{Mode: ModeStore, Memory: 256 << 10, MaxValue: 1024})
	val := func(i, gen int) string { return fmt.Sprintf("%d/%03d/%s", i, gen, strings.Repeat("s", 100)) }
	n := 0
	for {
		st := p.Put(Hash(fmt.Append(nil, "k", n)), fmt.Append(nil, "k", n), []byte(val(n, 0)), 0)
		if st == StatusNoMemory {
			break
		}
		if st != StatusOK {
			t.Fatal(st)
		}
		n++
	}
	st := p.Stats()
	if st.Evictions != 0 || st.Items != uint64(n) {
		t.Fatalf("store mode after %d puts: %+v", n, st)
	}
	if st.Bytes < st.Capacity*8/10 {
		t.Errorf("out of memory with %d of %d log bytes live", st.Bytes, st.Capacity)
	}
	t.Logf("%d items, %d of %d bytes (%.0f%%) when full", n, st.Bytes, st.Capacity, 100*float64(st.Bytes)/float64(st.Capacity))
	// Delete every other key; the rest keep their values through many
	// rounds of overwrites, which make the log clean (move) live items.
	for i := 0; i < n; i += 2 {
		if p.Delete(Hash(fmt.Append(nil, "k", i)), fmt.Append(nil, "k", i)) != StatusOK {
			t.Fatal("delete")
		}
	}
	for gen := 1; gen <= 20; gen++ {
		for i := 1; i < n; i += 2 {
			put(t, p, fmt.Sprint("k", i), val(i, gen), 0)
		}
		for i := range n {
			v, ok := get(t, p, fmt.Sprint("k", i))
			if i%2 == 0 && ok {
				t.Fatalf("deleted k%d is back", i)
			}
			if i%2 == 1 && (!ok || v != val(i, gen)) {
				t.Fatalf("gen %d: k%d = %q, %v", gen, i, v, ok)
			}
		}
		mustCheck(t, p)
	}
	if p.tail < 5*p.cap {
		t.Errorf("the log went round only %.1f times", float64(p.tail)/float64(p.cap))
	}
	// And the freed half can be filled again.
	for i := 0; i < n; i += 2 {
		put(t, p, fmt.Sprint("k", i), val(i, 99), 0)
	}
	mustCheck(t, p)
}

func TestApproxLRU(t *testing.T) {
	survivors := func(lru bool) int {
		p, _ := newTestStore(t, Config{ApproxLRU: lru, Memory: 256 << 10, MaxValue: 1024})
		hot := 50
		for i := range hot {
			put(t, p, fmt.Sprint("hot", i), "hot value", 0)
		}
		// A log rotation is about 600 puts, so each hot key, read once
		// every 50 puts, is read while in the oldest eighth of the log.
		filler := strings.Repeat("f", 300)
		for i := 0; p.tail < 8*p.cap; i++ {
			put(t, p, fmt.Sprint("cold", i), filler, 0)
			get(t, p, fmt.Sprint("hot", i%hot))
		}
		mustCheck(t, p)
		n := 0
		for i := range hot {
			if v, ok := get(t, p, fmt.Sprint("hot", i)); ok {
				if v != "hot value" {
					t.Fatalf("hot%d = %q", i, v)
				}
				n++
			}
		}
		return n
	}
	with, without := survivors(true), survivors(false)
	if with != 50 || without > 10 {
		t.Errorf("hot keys surviving 8 log rotations: %d of 50 with ApproxLRU, %d without", with, without)
	}
}

// collide makes every key hash to the same bucket and tag, so that a Put
// of a new key takes another key's slot (see Partition.settle).
func collide(p *Partition) {
	p.hashFn = func(k []byte) uint64 { return 0x1234_0000_0000_0000 | Hash(k)&0x0000_ffff_0000_0000 }
}

func hashOf(p *Partition, key string) uint64 { return p.hashFn([]byte(key)) }

func TestTagCollisionGetsSlotBack(t *testing.T) {
	p, _ := newTestStore(t, Config{})
	collide(p)
	for i, k := range []string{"a", "b", "c"} {
		if p.Put(hashOf(p, k), []byte(k), []byte("v"+k), 0) != StatusOK {
			t.Fatal("put")
		}
		if i > 0 {
			// k took the only slot with its tag, which was the previous key's.
			mustCheck(t, p) // settles: the previous key gets a slot back
		}
	}
	for _, k := range []string{"a", "b", "c"} {
		n, st := p.Get(hashOf(p, k), []byte(k), make([]byte, 8))
		if st != StatusOK || n != 2 {
			t.Fatalf("%s: %v", k, st)
		}
	}
	if st := p.Stats(); st.Items != 3 || st.Evictions != 0 {
		t.Fatalf("stats %+v", st)
	}
	// With several slots of the tag, Put compares keys: overwrites stay
	// overwrites.
	if p.Put(hashOf(p, "b"), []byte("b"), []byte("vb2"), 0) != StatusOK {
		t.Fatal("put")
	}
	if st := p.Stats(); st.Items != 3 {
		t.Fatalf("overwrite changed the item count: %+v", st)
	}
	mustCheck(t, p)
}

func TestTagCollisionDeleteWins(t *testing.T) {
	p, _ := newTestStore(t, Config{})
	collide(p)
	p.Put(hashOf(p, "a"), []byte("a"), []byte("va"), 0)
	p.Put(hashOf(p, "b"), []byte("b"), []byte("vb"), 0) // takes a's slot for now
	if st := p.Delete(hashOf(p, "a"), []byte("a")); st != StatusOK {
		t.Fatalf("delete of the displaced key: %v", st)
	}
	p.Stats()
	if _, st := p.Get(hashOf(p, "a"), []byte("a"), make([]byte, 8)); st != StatusNotFound {
		t.Fatalf("deleted key came back: %v", st)
	}
	mustCheck(t, p)
}

func TestTagCollisionPutAgain(t *testing.T) {
	p, _ := newTestStore(t, Config{})
	collide(p)
	p.Put(hashOf(p, "a"), []byte("a"), []byte("va"), 0)
	p.Put(hashOf(p, "b"), []byte("b"), []byte("vb"), 0) // takes a's slot for now
	p.Put(hashOf(p, "a"), []byte("a"), []byte("va2"), 0)
	st := p.Stats()
	if st.Items != 2 || st.Evictions != 0 {
		t.Fatalf("stats %+v", st)
	}
	if v, _ := get(t, p, "a"); v != "va2" {
		t.Fatalf("a = %q", v)
	}
	mustCheck(t, p)
}

func TestTagCollisionFullChainEvicts(t *testing.T) {
	p, _ := newTestStore(t, Config{})
	// Seven keys fill their one bucket and no spare is left, so a key that
	// loses its slot cannot get one back.
	var taken []uint64
	for b := p.allocSpare(); b != 0; b = p.allocSpare() {
		taken = append(taken, b)
	}
	p.hashFn = func(k []byte) uint64 {
		if k[0] == 'x' || k[0] == 'y' {
			return 0x7777_0000_0000_0000
		}
		return uint64(k[0]) << 48
	}
	for _, k := range []string{"a", "b", "c", "d", "e", "x"} {
		p.Put(hashOf(p, k), []byte(k), []byte("v"), 0)
	}
	p.Put(hashOf(p, "y"), []byte("y"), []byte("v"), 0) // takes x's slot; the bucket has one free slot left
	p.Put(hashOf(p, "f"), []byte("f"), []byte("v"), 0) // fills it
	st := p.Stats()                                    // x finds no slot
	if st.Items != 7 || st.Evictions != 1 {
		t.Fatalf("stats %+v", st)
	}
	if _, ok := get(t, p, "x"); ok {
		t.Fatal("x should have been evicted")
	}
	for _, b := range taken {
		p.releaseSpare(b)
	}
	mustCheck(t, p)
}

// partSink keeps partitionOf's result live so the call is measured.
var partSink int

func TestZeroAllocs(t *testing.T) {
	p, _ := newTestStore(t, Config{Memory: 4 << 20, MaxValue: 1024})
	key, val, dst := []byte("some-key-16bytes"), bytes.Repeat([]byte{'v'}, 32), make([]byte, 64)
	h := Hash(key)
	i := 0
	keys := make([][]byte, 1000)
	for j := range keys {
		keys[j] = fmt.Appendf(nil, "key-%012d", j)
	}
	for name, f := range map[string]func(){
		"get":       func() { p.Get(h, key, dst) },
		"get-miss":  func() { p.Get(h^1, key, dst) },
		"put":       func() { p.Put(h, key, val, 0) },
		"put-ttl":   func() { p.Put(h, key, val, 60) },
		"put-new":   func() { k := keys[i%len(keys)]; i++; p.Put(Hash(k), k, val, 0) },
		"delete":    func() { p.Delete(h, key); p.Put(h, key, val, 0) },
		"stats":     func() { p.Stats() },
		"hash":      func() { Hash(key) },
		"prefetch":  func() { p.Prefetch(h); p.PrefetchItem(h) },
		"partition": func() { partSink = partitionOf(h, 7) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %.1f allocations per call", name, n)
		}
	}
}

func TestUseAfterClosePanics(t *testing.T) {
	s, err := New(Config{Memory: 16 << 20, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	p := s.Partition(1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Get after Close did not panic")
		}
	}()
	p.Get(1, []byte("k"), nil)
}
