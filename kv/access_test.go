package kv

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func peekItem(t *testing.T, p *Partition, key string) Meta {
	t.Helper()
	dst := make([]byte, 64<<10)
	_, m, st := p.PeekItem(p.hashFn([]byte(key)), []byte(key), dst)
	if st != StatusOK {
		t.Fatalf("peekitem %q: %v", key, st)
	}
	return m
}

// The fetched bit: every read sets it (Get, GetItem, GetAndTouch, Touch),
// GetItem reports it as it was before, PeekItem leaves it, a write starts
// a new item without it.
func TestFetched(t *testing.T) {
	for _, atimes := range []bool{false, true} {
		t.Run(fmt.Sprint("atimes=", atimes), func(t *testing.T) {
			p, _ := newTestStore(t, Config{AccessTimes: atimes})
			h := p.hashFn([]byte("k"))
			put(t, p, "k", "v", 0)
			if m := peekItem(t, p, "k"); m.Fetched {
				t.Fatal("a new item is fetched")
			}
			if m := peekItem(t, p, "k"); m.Fetched {
				t.Fatal("PeekItem set the fetched bit")
			}
			if _, m, _ := getItem(t, p, "k"); m.Fetched {
				t.Fatal("GetItem reported its own read")
			}
			if _, m, _ := getItem(t, p, "k"); !m.Fetched {
				t.Fatal("GetItem did not set the fetched bit")
			}
			// A write is a new item; a read that does not fit is no read.
			storeKV(p, "k", "longer value", 0, 0, StoreSet, 0)
			if n, _, st := p.GetItem(h, []byte("k"), make([]byte, 2)); st != StatusTooLarge || n != 12 {
				t.Fatal(n, st)
			}
			if m := peekItem(t, p, "k"); m.Fetched {
				t.Fatal("a set, or a read into a short buffer, left the item fetched")
			}
			for name, read := range map[string]func(){
				"get":   func() { get(t, p, "k") },
				"touch": func() { p.Touch(h, []byte("k"), 0) },
				"touch-ttl": func() {
					p.Touch(h, []byte("k"), 60) // rewrites the item with room for an expiry
				},
				"gat": func() { p.GetAndTouch(h, []byte("k"), make([]byte, 64), 0) },
			} {
				storeKV(p, "k", "v", 0, 0, StoreSet, 0)
				read()
				if m := peekItem(t, p, "k"); !m.Fetched {
					t.Errorf("%s did not set the fetched bit", name)
				}
			}
			mustCheck(t, p)
		})
	}
}

// With AccessTimes every item carries its last access, a write or a
// read, as of before the command that reports it.
func TestAccessTimes(t *testing.T) {
	p, clock := newTestStore(t, Config{AccessTimes: true})
	h := p.hashFn([]byte("k"))
	put(t, p, "k", "v", 0)
	*clock += 5
	if m := peekItem(t, p, "k"); !m.Timed || m.Accessed != 1000 {
		t.Fatalf("after a put at 1000: %+v", m)
	}
	*clock += 2
	if _, m, _ := getItem(t, p, "k"); m.Accessed != 1000 {
		t.Fatalf("GetItem at 1007 reported %d, want the put's 1000", m.Accessed)
	}
	*clock += 3
	if m := peekItem(t, p, "k"); m.Accessed != 1007 {
		t.Fatalf("after a GetItem at 1007: accessed %d", m.Accessed)
	}
	get(t, p, "k") // 1010
	*clock++
	p.Touch(h, []byte("k"), 60) // 1011, moved to the tail with an expiry
	*clock++
	if m := peekItem(t, p, "k"); m.Accessed != 1011 || !m.Fetched || m.Expires != 1071 {
		t.Fatalf("after a touch at 1011: %+v", m)
	}
	p.GetAndTouch(h, []byte("k"), make([]byte, 8), 90) // 1012, in place
	if m := peekItem(t, p, "k"); m.Accessed != 1012 || m.Expires != 1102 {
		t.Fatalf("after a gat at 1012: %+v", m)
	}
	*clock++
	storeKV(p, "k", "w", 0, 0, StoreAppend, 0)
	if m := peekItem(t, p, "k"); m.Accessed != 1013 || m.Fetched {
		t.Fatalf("after an append at 1013: %+v", m)
	}
	mustCheck(t, p)

	// Off: no time, and 4 bytes less per item.
	q, _ := newTestStore(t, Config{})
	put(t, q, "k", "v", 0)
	if m := peekItem(t, q, "k"); m.Timed || m.Accessed != 0 {
		t.Fatalf("without AccessTimes: %+v", m)
	}
	p, _ = newTestStore(t, Config{AccessTimes: true})
	put(t, p, "k", "v", 0)
	if a, b := p.Stats().Bytes, q.Stats().Bytes; a != b+4 {
		t.Fatalf("an item takes %d bytes with AccessTimes, %d without", a, b)
	}
}

// Moves without a write (ApproxLRU, store-mode cleaning) keep the fetched
// bit and the access time; a read that moves an item is still a read.
func TestAccessSurvivesMoves(t *testing.T) {
	for _, cfg := range []Config{{ApproxLRU: true}, {Mode: ModeStore}} {
		cfg.MaxValue, cfg.AccessTimes = 1024, true
		p, clock := newTestStore(t, cfg)
		val := strings.Repeat("x", 200)
		last := map[string]uint32{}
		fetched := map[string]bool{}
		for i := range 4000 {
			k := fmt.Sprint("k", i%40)
			if i < 40 {
				put(t, p, k, val, 0)
				last[k] = *clock
				continue
			}
			if i%100 == 0 {
				*clock++
			}
			// Rewrite a few other keys to make the log turn over.
			o := fmt.Sprint("o", i)
			put(t, p, o, val, 0)
			p.Delete(p.hashFn([]byte(o)), []byte(o))
			m := peekItem(t, p, k)
			if m.Accessed != last[k] || m.Fetched != fetched[k] {
				t.Fatalf("mode %v lru %v: %s accessed %d fetched %v, want %d %v", cfg.Mode, cfg.ApproxLRU, k,
					m.Accessed, m.Fetched, last[k], fetched[k])
			}
			if i%3 == 0 {
				get(t, p, k)
				last[k], fetched[k] = *clock, true
			}
		}
		if st := p.Stats(); st.Capacity > 200*4000 {
			t.Fatalf("the log (%d B) never turned over", st.Capacity)
		}
		mustCheck(t, p)
	}
}

// Reads that mark items allocate nothing.
func TestAccessZeroAllocs(t *testing.T) {
	p, clock := newTestStore(t, Config{Memory: 4 << 20, MaxValue: 1024, AccessTimes: true})
	key, val, dst := []byte("some-key-16bytes"), bytes.Repeat([]byte{'v'}, 32), make([]byte, 1024)
	h := Hash(key)
	p.Put(h, key, val, 0)
	for name, f := range map[string]func(){
		"get":      func() { *clock++; p.Get(h, key, dst) },
		"getitem":  func() { *clock++; p.GetItem(h, key, dst) },
		"peekitem": func() { p.PeekItem(h, key, dst) },
		"put":      func() { p.Put(h, key, val, 0) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %.1f allocations per call", name, n)
		}
	}
}
