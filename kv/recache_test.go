package kv

import "testing"

// Invalidate marks an item stale with a new version, frees its win token,
// keeps its value, flags and (unless asked) TTL; a write clears the marks.
func TestInvalidate(t *testing.T) {
	p, clock := newTestStore(t, Config{AccessTimes: true})
	k := []byte("k")
	h := p.hashFn(k)
	v1, _ := storeKV(p, "k", "moo", 100, 7, StoreSet, 0)
	if st := p.SetRecache(h, k, false, true); st != StatusOK {
		t.Fatal(st)
	}
	if m := peekItem(t, p, "k"); m.Stale || !m.Won {
		t.Fatalf("after SetRecache(won): %+v", m)
	}
	if _, st := p.Invalidate(h, k, v1+1, false, 0); st != StatusExists {
		t.Fatalf("invalidate with a wrong cas: %v", st)
	}
	if _, st := p.Invalidate(h, []byte("none"), 0, false, 0); st != StatusNotFound {
		t.Fatalf("invalidate a missing key: %v", st)
	}
	*clock += 10
	v2, st := p.Invalidate(h, k, v1, false, 0)
	if st != StatusOK || v2 == v1 {
		t.Fatalf("invalidate: version %d (was %d), %v", v2, v1, st)
	}
	val, m, _ := getItem(t, p, "k")
	if val != "moo" || !m.Stale || m.Won || m.Version != v2 || m.Flags != 7 || m.Expires != 1100 || m.Accessed != 1000 {
		t.Fatalf("after invalidate: %q %+v", val, m)
	}
	if _, st := p.Invalidate(h, k, 0, true, 30); st != StatusOK {
		t.Fatal(st)
	}
	if m := peekItem(t, p, "k"); !m.Stale || m.Expires != 1040 {
		t.Fatalf("invalidate with a TTL: %+v", m)
	}
	p.SetRecache(h, k, true, true)
	if m := peekItem(t, p, "k"); !m.Stale || !m.Won {
		t.Fatalf("after SetRecache(stale, won): %+v", m)
	}
	storeKV(p, "k", "new", 0, 0, StoreSet, 0)
	if m := peekItem(t, p, "k"); m.Stale || m.Won {
		t.Fatalf("a write kept the marks: %+v", m)
	}
	if st := p.SetRecache(h, []byte("none"), true, true); st != StatusNotFound {
		t.Fatal(st)
	}
	mustCheck(t, p)
}

// The marks survive moves (store-mode cleaning).
func TestRecacheSurvivesMoves(t *testing.T) {
	p, _ := newTestStore(t, Config{Mode: ModeStore, MaxValue: 1024})
	k := []byte("k")
	put(t, p, "k", "v", 0)
	p.Invalidate(p.hashFn(k), k, 0, false, 0)
	p.SetRecache(p.hashFn(k), k, true, true)
	val := make([]byte, 200)
	for i := range 4000 {
		o := []byte{'o', byte(i), byte(i >> 8)}
		p.Put(p.hashFn(o), o, val, 0)
		p.Delete(p.hashFn(o), o)
	}
	if p.head == 0 {
		t.Fatal("the log never turned over")
	}
	if m := peekItem(t, p, "k"); !m.Stale || !m.Won {
		t.Fatalf("after cleaning: %+v", m)
	}
	mustCheck(t, p)
}

func TestRecacheZeroAllocs(t *testing.T) {
	p, _ := newTestStore(t, Config{Memory: 4 << 20, MaxValue: 1024})
	key := []byte("some-key-16bytes")
	h := Hash(key)
	p.Put(h, key, make([]byte, 32), 0)
	p.Invalidate(h, key, 0, false, 0) // the scratch buffer, allocated once
	for name, f := range map[string]func(){
		"invalidate": func() { p.Invalidate(h, key, 0, false, 0) },
		"setrecache": func() { p.SetRecache(h, key, true, true) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %.1f allocations per call", name, n)
		}
	}
}
