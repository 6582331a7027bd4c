package kv

import "testing"

// SetVersion gives the item the version asked for, in place once it
// carries one, keeping value, flags, TTL, access history and marks; a
// write gives it a new one again.
func TestSetVersion(t *testing.T) {
	for _, mode := range []Mode{ModeCache, ModeStore} {
		p, clock := newTestStore(t, Config{Mode: mode, AccessTimes: true})
		k := []byte("k")
		h := p.hashFn(k)
		storeKV(p, "k", "moo", 100, 7, StoreSet, 0)
		getItem(t, p, "k") // fetched, accessed at 1000
		p.SetRecache(h, k, true, true)
		*clock += 5
		if st := p.SetVersion(h, []byte("none"), 9); st != StatusNotFound {
			t.Fatalf("a missing key: %v", st)
		}
		for _, v := range []uint64{1 << 40, 3, 3} { // the second in place
			if st := p.SetVersion(h, k, v); st != StatusOK {
				t.Fatal(st)
			}
			m := peekItem(t, p, "k")
			if m.Version != v || m.Flags != 7 || m.Expires != 1100 || !m.Fetched || m.Accessed != 1000 || !m.Stale || !m.Won {
				t.Fatalf("after SetVersion(%d): %+v", v, m)
			}
		}
		if val, _, _ := getItem(t, p, "k"); val != "moo" {
			t.Fatalf("value %q", val)
		}
		if _, st := storeKV(p, "k", "x", 0, 0, StoreSet, 3); st != StatusOK {
			t.Fatalf("cas with the version set: %v", st)
		}
		if m := peekItem(t, p, "k"); m.Version == 3 {
			t.Fatal("a write kept the version set")
		}
		v, _ := storeKV(p, "k", "y", 0, 0, StoreSet, 0)
		if st := p.SetVersion(h, k, 0); st != StatusOK {
			t.Fatal(st)
		}
		if m := peekItem(t, p, "k"); m.Version == v || m.Version == 0 {
			t.Fatalf("SetVersion(0): version %d (was %d)", m.Version, v)
		}
		mustCheck(t, p)
	}
}

// Retime sets the TTL as Touch does, but is no read: the item's fetched
// bit and access time stay.
func TestRetime(t *testing.T) {
	p, clock := newTestStore(t, Config{AccessTimes: true})
	k := []byte("k")
	h := p.hashFn(k)
	v, _ := storeKV(p, "k", "v", 100, 0, StoreSet, 0)
	*clock += 10
	if _, st := p.Retime(h, []byte("none"), 5); st != StatusNotFound {
		t.Fatal(st)
	}
	for _, ttl := range []uint32{30, 0, 50} { // in place, without, with a TTL again
		m, st := p.Retime(h, k, ttl)
		if st != StatusOK || m.Version != v {
			t.Fatalf("retime %d: %v %+v", ttl, st, m)
		}
		m = peekItem(t, p, "k")
		want := uint32(0)
		if ttl != 0 {
			want = 1010 + ttl
		}
		if m.Expires != want || m.Fetched || m.Accessed != 1000 || m.Version != v {
			t.Fatalf("after retime %d: %+v", ttl, m)
		}
	}
	mustCheck(t, p)
}

func TestVersionZeroAllocs(t *testing.T) {
	p, _ := newTestStore(t, Config{Memory: 4 << 20, MaxValue: 1024})
	key := []byte("some-key-16bytes")
	h := Hash(key)
	p.Put(h, key, make([]byte, 32), 0)
	p.SetVersion(h, key, 5) // the scratch buffer, allocated once
	for name, f := range map[string]func(){
		"setversion": func() { p.SetVersion(h, key, 7) },
		"rewrite":    func() { p.SetVersion(h, key, 0); p.SetVersion(h, key, 7) },
		"retime":     func() { p.Retime(h, key, 30); p.Retime(h, key, 0) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %.1f allocations per call", name, n)
		}
	}
}
