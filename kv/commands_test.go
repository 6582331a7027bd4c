package kv

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
)

func storeKV(p *Partition, key, val string, ttl, flags uint32, mode StoreMode, cas uint64) (uint64, Status) {
	return p.Store(p.hashFn([]byte(key)), []byte(key), []byte(val), ttl, flags, mode, cas)
}

func getItem(t *testing.T, p *Partition, key string) (string, Meta, bool) {
	t.Helper()
	dst := make([]byte, 64<<10)
	n, m, st := p.GetItem(p.hashFn([]byte(key)), []byte(key), dst)
	switch st {
	case StatusOK:
		return string(dst[:n]), m, true
	case StatusNotFound:
		return "", m, false
	}
	t.Fatalf("getitem %q: %v", key, st)
	return "", m, false
}

func incr(p *Partition, key string, delta uint64, decr bool) (uint64, Status) {
	n, _, st := p.Incr(p.hashFn([]byte(key)), []byte(key), delta, decr, false, 0, 0, 0)
	return n, st
}

func TestStoreConditions(t *testing.T) {
	p, _ := newTestStore(t, Config{})
	if _, st := storeKV(p, "a", "1", 0, 0, StoreReplace, 0); st != StatusNotStored {
		t.Fatalf("replace of a missing key: %v", st)
	}
	if _, st := storeKV(p, "a", "1", 0, 0, StoreAppend, 0); st != StatusNotStored {
		t.Fatalf("append to a missing key: %v", st)
	}
	if _, st := storeKV(p, "a", "1", 0, 0, StorePrepend, 0); st != StatusNotStored {
		t.Fatalf("prepend to a missing key: %v", st)
	}
	v1, st := storeKV(p, "a", "1", 0, 7, StoreAdd, 0)
	if st != StatusOK || v1 == 0 {
		t.Fatalf("add of a new key: %v %d", st, v1)
	}
	if _, st := storeKV(p, "a", "2", 0, 0, StoreAdd, 0); st != StatusNotStored {
		t.Fatalf("add of an existing key: %v", st)
	}
	if v, m, _ := getItem(t, p, "a"); v != "1" || m.Flags != 7 || m.Version != v1 {
		t.Fatalf("after add: %q %+v, want 1 flags 7 version %d", v, m, v1)
	}
	v2, st := storeKV(p, "a", "x", 0, 9, StoreReplace, 0)
	if st != StatusOK || v2 == v1 {
		t.Fatalf("replace: %v, version %d after %d", st, v2, v1)
	}
	storeKV(p, "a", "<", 0, 1, StorePrepend, 0)
	storeKV(p, "a", ">", 0, 1, StoreAppend, 0)
	if v, m, _ := getItem(t, p, "a"); v != "<x>" || m.Flags != 9 {
		t.Fatalf("after prepend and append: %q %+v, want <x> flags 9 (kept)", v, m)
	}
	mustCheck(t, p)
}

func TestCAS(t *testing.T) {
	p, _ := newTestStore(t, Config{})
	if _, st := storeKV(p, "k", "v", 0, 0, StoreSet, 12345); st != StatusNotFound {
		t.Fatalf("cas of a missing key: %v", st)
	}
	put(t, p, "k", "v0", 0)
	_, m, _ := getItem(t, p, "k")
	v1, st := storeKV(p, "k", "v1", 0, 0, StoreSet, m.Version)
	if st != StatusOK {
		t.Fatalf("cas with the current version: %v", st)
	}
	if _, st := storeKV(p, "k", "v2", 0, 0, StoreSet, m.Version); st != StatusExists {
		t.Fatalf("cas with a stale version: %v", st)
	}
	if v, _ := get(t, p, "k"); v != "v1" {
		t.Fatalf("after a failed cas: %q, want v1", v)
	}
	// Versions never repeat, even for the same value.
	seen := map[uint64]bool{v1: true}
	for i := range 100 {
		v, st := storeKV(p, "k", "v1", 0, 0, StoreSet, 0)
		if st != StatusOK || seen[v] {
			t.Fatalf("set %d: %v, version %d repeats", i, st, v)
		}
		seen[v] = true
	}
}

func TestIncrDecr(t *testing.T) {
	p, _ := newTestStore(t, Config{})
	if _, st := incr(p, "n", 1, false); st != StatusNotFound {
		t.Fatalf("incr of a missing key: %v", st)
	}
	put(t, p, "n", "10", 0)
	if n, st := incr(p, "n", 5, false); st != StatusOK || n != 15 {
		t.Fatalf("incr 10+5: %d %v", n, st)
	}
	if n, st := incr(p, "n", 100, true); st != StatusOK || n != 0 {
		t.Fatalf("decr below zero: %d %v, want 0", n, st)
	}
	put(t, p, "n", "18446744073709551615", 0)
	if n, st := incr(p, "n", 2, false); st != StatusOK || n != 1 {
		t.Fatalf("incr past 2^64-1: %d %v, want 1 (wraps)", n, st)
	}
	if v, _ := get(t, p, "n"); v != "1" {
		t.Fatalf("stored %q, want 1", v)
	}
	for _, bad := range []string{"", "x", "1x", "-1", " 1", "18446744073709551616", "123456789012345678901", "1\n"} {
		put(t, p, "b", bad, 0)
		if _, st := incr(p, "b", 1, false); st != StatusNotNumeric {
			t.Fatalf("incr of %q: %v, want not numeric", bad, st)
		}
		if v, _ := get(t, p, "b"); v != bad {
			t.Fatalf("failed incr changed %q to %q", bad, v)
		}
	}
	put(t, p, "s", "9  ", 0) // memcached pads a decremented number with spaces
	if n, st := incr(p, "s", 1, false); st != StatusOK || n != 10 {
		t.Fatalf("incr of %q: %d %v", "9  ", n, st)
	}
	// Create with an initial value (binary protocol), flags and TTL kept after.
	h := p.hashFn([]byte("c"))
	if n, _, st := p.Incr(h, []byte("c"), 1, false, true, 42, 0, 3); st != StatusOK || n != 42 {
		t.Fatalf("create: %d %v", n, st)
	}
	if n, _, st := p.Incr(h, []byte("c"), 1, false, true, 42, 0, 0); st != StatusOK || n != 43 {
		t.Fatalf("incr after create: %d %v", n, st)
	}
	if _, m, _ := getItem(t, p, "c"); m.Flags != 3 {
		t.Fatalf("flags %d after incr, want 3", m.Flags)
	}
	mustCheck(t, p)
}

func TestTouch(t *testing.T) {
	p, clock := newTestStore(t, Config{})
	h := p.hashFn([]byte("t"))
	if _, st := p.Touch(h, []byte("t"), 10); st != StatusNotFound {
		t.Fatalf("touch of a missing key: %v", st)
	}
	put(t, p, "t", "v", 5)
	*clock += 5
	if _, st := p.Touch(h, []byte("t"), 10); st != StatusNotFound {
		t.Fatalf("touch of an expired key: %v", st)
	}
	v, _ := storeKV(p, "t", "v", 5, 8, StoreSet, 0)
	if m, st := p.Touch(h, []byte("t"), 100); st != StatusOK || m.Version != v {
		t.Fatalf("touch: %v %+v", st, m)
	}
	*clock += 50
	if _, m, ok := getItem(t, p, "t"); !ok || m.Version != v || m.Flags != 8 {
		t.Fatalf("after touch: %v %+v, want version %d (kept) flags 8", ok, m, v)
	}
	// To no expiry and back: the item is rewritten, its version kept.
	dst := make([]byte, 8)
	if n, m, st := p.GetAndTouch(h, []byte("t"), dst, 0); st != StatusOK || string(dst[:n]) != "v" || m.Version != v {
		t.Fatalf("gat: %v %q %+v", st, dst[:n], m)
	}
	*clock += 1000
	if _, m, ok := getItem(t, p, "t"); !ok || m.Version != v {
		t.Fatalf("after gat to no expiry: %v %+v", ok, m)
	}
	p.Touch(h, []byte("t"), 1)
	*clock++
	if _, ok := get(t, p, "t"); ok {
		t.Fatal("touched to 1 s, still there after it")
	}
	mustCheck(t, p)
}

func TestFlush(t *testing.T) {
	p, clock := newTestStore(t, Config{})
	for i := range 50 {
		put(t, p, fmt.Sprint("k", i), "v", 0)
	}
	p.Flush(10)
	if _, ok := get(t, p, "k1"); !ok {
		t.Fatal("flush with a delay dropped items at once")
	}
	*clock += 10
	for i := range 50 {
		if _, ok := get(t, p, fmt.Sprint("k", i)); ok {
			t.Fatalf("k%d survived the flush", i)
		}
	}
	if st := p.Stats(); st.Items != 0 || st.Bytes != 0 {
		t.Fatalf("after flush: %+v", st)
	}
	put(t, p, "new", "v", 0)
	if v, _ := get(t, p, "new"); v != "v" {
		t.Fatal("no put after flush")
	}
	p.Flush(0)
	if _, ok := get(t, p, "new"); ok {
		t.Fatal("flush 0 left an item")
	}
	mustCheck(t, p)
}

// Versions survive moves: LRU re-appends and store-mode cleaning.
func TestVersionSurvivesMoves(t *testing.T) {
	for _, cfg := range []Config{{ApproxLRU: true, MaxValue: 1024}, {Mode: ModeStore, MaxValue: 1024}} {
		p, _ := newTestStore(t, cfg)
		vers := map[string]uint64{}
		val := strings.Repeat("x", 200)
		for i := range 4000 {
			k := fmt.Sprint("k", i%40)
			if i < 40 {
				v, st := storeKV(p, k, val, 0, uint32(i), StoreSet, 0)
				if st != StatusOK {
					t.Fatal(st)
				}
				vers[k] = v
				continue
			}
			// Rewrite a few other keys to make the log turn over.
			storeKV(p, fmt.Sprint("o", i), val, 0, 0, StoreSet, 0)
			p.Delete(p.hashFn([]byte(fmt.Sprint("o", i))), []byte(fmt.Sprint("o", i)))
			if _, m, ok := getItem(t, p, k); ok && m.Version != vers[k] {
				t.Fatalf("mode %v lru %v: %s version %d, was %d", cfg.Mode, cfg.ApproxLRU, k, m.Version, vers[k])
			}
			get(t, p, k)
		}
		if st := p.Stats(); st.Capacity > 200*4000 {
			t.Fatalf("the log (%d B) never turned over", st.Capacity)
		}
		mustCheck(t, p)
	}
}

func TestCommandsBadInput(t *testing.T) {
	p, _ := newTestStore(t, Config{MaxValue: 16})
	long := bytes.Repeat([]byte{'k'}, MaxKeyLen+1)
	if _, st := p.Store(0, long, nil, 0, 0, StoreSet, 0); st != StatusBadKey {
		t.Fatal(st)
	}
	if _, _, st := p.Incr(0, nil, 1, false, false, 0, 0, 0); st != StatusBadKey {
		t.Fatal(st)
	}
	put(t, p, "a", strings.Repeat("v", 10), 0)
	if _, st := storeKV(p, "a", strings.Repeat("w", 10), 0, 0, StoreAppend, 0); st != StatusTooLarge {
		t.Fatalf("append past MaxValue: %v", st)
	}
	dst := make([]byte, 2)
	if n, _, st := p.GetItem(p.hashFn([]byte("a")), []byte("a"), dst); st != StatusTooLarge || n != 10 {
		t.Fatalf("getitem into a short buffer: %d %v", n, st)
	}
	if _, _, st := p.Incr(p.hashFn([]byte("a")), []byte("a"), math.MaxUint64, true, false, 0, 0, 0); st != StatusNotNumeric {
		t.Fatal(st)
	}
}

func TestCommandsZeroAllocs(t *testing.T) {
	p, _ := newTestStore(t, Config{Memory: 4 << 20, MaxValue: 1024})
	key, val, dst := []byte("some-key-16bytes"), bytes.Repeat([]byte{'v'}, 32), make([]byte, 1024)
	ckey := []byte("counter-16-bytes")
	h, ch := Hash(key), Hash(ckey)
	p.Put(h, key, val, 0)
	p.Touch(h, key, 0) // the scratch buffer, allocated once
	for name, f := range map[string]func(){
		"getitem": func() { p.GetItem(h, key, dst) },
		"set":     func() { p.Store(h, key, val, 0, 5, StoreSet, 0) },
		"cas": func() {
			_, m, _ := p.GetItem(h, key, dst)
			p.Store(h, key, val, 0, 5, StoreSet, m.Version)
		},
		"add":     func() { p.Store(h, key, val, 0, 0, StoreAdd, 0) },
		"replace": func() { p.Store(h, key, val, 0, 0, StoreReplace, 0) },
		"append":  func() { p.Put(h, key, val, 0); p.Store(h, key, val, 0, 0, StoreAppend, 0) },
		"incr":    func() { p.Incr(ch, ckey, 1, false, true, 0, 0, 0) },
		"touch":   func() { p.Touch(h, key, 60) },
		"gat":     func() { p.GetAndTouch(h, key, dst, 0) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %.1f allocations per call", name, n)
		}
	}
}
