package kv

import (
	"fmt"
	"testing"
)

// A scan resumed in small steps visits every live item once, with its
// meta and length, and skips the deleted, the expired and the replaced.
func TestScan(t *testing.T) {
	p, clock := newTestStore(t, Config{})
	want := map[string]int{}
	for i := range 300 {
		k := fmt.Sprintf("k%d", i)
		v := fmt.Sprintf("value-%d", i)
		var ttl uint32
		if i%7 == 0 {
			ttl = 5
		}
		put(t, p, k, v, ttl)
		if i%7 != 0 {
			want[k] = len(v)
		}
	}
	for i := 0; i < 300; i += 10 {
		k := fmt.Sprintf("k%d", i)
		p.Delete(p.hashFn([]byte(k)), []byte(k))
		delete(want, k)
	}
	put(t, p, "k1", "replaced", 0)
	want["k1"] = len("replaced")
	*clock += 10 // the TTL items expire
	got := map[string]int{}
	var at uint64
	for steps, done := 0, false; !done; steps++ {
		if steps > 1000 {
			t.Fatal("the scan does not end")
		}
		budget := 3
		at, done = p.Scan(at, 7, func(key []byte, m Meta, vlen int) bool {
			if budget == 0 {
				return false
			}
			budget--
			if _, dup := got[string(key)]; dup {
				t.Fatalf("%s visited twice", key)
			}
			if m.Version == 0 || m.Expires != 0 {
				t.Fatalf("%s: meta %+v", key, m)
			}
			got[string(key)] = vlen
			return true
		})
	}
	if len(got) != len(want) {
		t.Fatalf("visited %d items, want %d", len(got), len(want))
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("%s: length %d, want %d", k, got[k], n)
		}
	}
}
