package kv

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"testing"
)

// The model test runs random operation sequences against a partition and
// a Go map. A hit must return exactly the model's value; a key the model
// does not hold (never put, deleted, expired) must miss. Cache mode may
// miss a key the model holds (it was evicted, or briefly lost its slot to
// a key with the same tag, see Partition.settle); if it is found again
// later, it must still have the model's value. Store mode may never miss
// a held key, and may refuse a Put only when the partition is full,
// keeping the old value.

type entry struct {
	val []byte
	exp uint32 // 0 = no expiry
}

type modelRun struct {
	t     testing.TB
	p     *Partition
	s     *Store
	clock uint32
	m     map[string]entry
	dst   []byte
	ops   int
	hash  func([]byte) uint64
	log   []string // recent operations, printed on failure
	noMem int      // Puts refused for lack of memory
	dry   bool     // the spare buckets ran out at some point
}

type modelCfg struct {
	mode     Mode
	lru      bool
	weakHash bool   // collide tags and buckets on purpose
	startAt  uint64 // initial log offset
	memory   int64
	maxValue int
	keys     int // key space, default 300
	atimes   bool
}

// weakHash keeps 8 tag bits and 2 bucket bits, so keys share tags and
// chains overflow: it exercises key verification, spares and eviction.
func weakHash(k []byte) uint64 { return Hash(k) & 0x00ff_ffff_c000_0000 }

func newModelRun(t testing.TB, c modelCfg) *modelRun {
	r := &modelRun{t: t, clock: 1000, m: map[string]entry{}}
	if c.memory == 0 {
		c.memory = 96 << 10
	}
	if c.maxValue == 0 {
		c.maxValue = 2048
	}
	s, err := New(Config{Partitions: 1, Memory: c.memory, MaxValue: c.maxValue, Mode: c.mode,
		ApproxLRU: c.lru, AccessTimes: c.atimes, Now: func() uint32 { return r.clock }})
	if err != nil {
		t.Fatal(err)
	}
	r.s, r.p = s, s.Partition(0)
	r.hash = Hash
	if c.weakHash {
		r.hash = weakHash
		r.p.hashFn = weakHash
	}
	if c.startAt != 0 {
		r.p.startAt(c.startAt)
	}
	r.dst = make([]byte, c.maxValue)
	return r
}

func (r *modelRun) close() { _ = r.s.Close() }

func (r *modelRun) fail(format string, args ...any) {
	r.t.Helper()
	n := len(r.log)
	from := max(0, n-20)
	r.t.Fatalf("op %d: %s\nlast ops:\n  %s", r.ops, fmt.Sprintf(format, args...),
		bytes.Join(func() [][]byte {
			var b [][]byte
			for _, l := range r.log[from:] {
				b = append(b, []byte(l))
			}
			return b
		}(), []byte("\n  ")))
}

func (r *modelRun) note(format string, args ...any) {
	if len(r.log) > 1000 {
		r.log = append(r.log[:0], r.log[len(r.log)-20:]...)
	}
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

// held returns the model's entry if it is there and not expired.
func (r *modelRun) held(key []byte) (entry, bool) {
	e, ok := r.m[string(key)]
	if !ok || (e.exp != 0 && r.clock >= e.exp) {
		return entry{}, false
	}
	return e, true
}

// peek looks the key up without side effects.
func (r *modelRun) peek(key []byte) ([]byte, bool) {
	wi, off := r.p.find(r.hash(key), key)
	if wi < 0 {
		return nil, false
	}
	rec := r.p.at(off)
	h, klen, vlen, ttl := header(rec)
	if ttl && r.clock >= expiryOf(rec, h) {
		return nil, false
	}
	return rec[h+klen : h+klen+vlen], true
}

func (r *modelRun) after() {
	r.ops++
	if r.ops%16 == 0 {
		r.verify()
	}
}

func (r *modelRun) verify() {
	r.t.Helper()
	if err := r.p.check(); err != nil {
		r.fail("invariant: %v", err)
	}
}

func (r *modelRun) put(key, val []byte, ttl uint32) {
	r.t.Helper()
	r.note("put %q len %d ttl %d (clock %d)", key, len(val), ttl, r.clock)
	before := r.p.Stats()
	st := r.p.Put(r.hash(key), key, val, ttl)
	switch {
	case !validKey(key):
		if st != StatusBadKey {
			r.fail("put bad key %q: %v", key, st)
		}
	case len(val) > r.p.maxValue:
		if st != StatusTooLarge {
			r.fail("put %d bytes over max %d: %v", len(val), r.p.maxValue, st)
		}
	case st == StatusOK:
		r.dry = r.dry || !r.p.hasSpare()
		e := entry{val: append([]byte(nil), val...)}
		if ttl != 0 {
			e.exp = r.clock + ttl
		}
		r.m[string(key)] = e
		got, ok := r.peek(key)
		if !ok || !bytes.Equal(got, val) {
			r.fail("put %q ok but not readable back (found %v)", key, ok)
		}
	case st == StatusNoMemory:
		r.noMem++
		if r.p.mode != ModeStore {
			r.fail("no memory in cache mode")
		}
		size := itemSize(len(key), len(val), ttl != 0, r.p.fresh(0))
		old := uint64(0)
		if wi, off := r.p.find(r.hash(key), key); wi >= 0 {
			h, klen, vlen, _ := header(r.p.at(off))
			old = uint64(h + klen + vlen)
		}
		if before.Bytes+size-old <= r.p.storeLimit && r.p.hasSpare() {
			r.fail("no memory with %d live bytes + %d - %d <= limit %d and spares left", before.Bytes, size, old, r.p.storeLimit)
		}
		if e, ok := r.held(key); ok {
			got, found := r.peek(key)
			if !found || !bytes.Equal(got, e.val) {
				r.fail("failed put lost the old value of %q", key)
			}
		}
	default:
		r.fail("put %q: %v", key, st)
	}
	r.after()
}

func (r *modelRun) get(key []byte, dstLen int) {
	r.t.Helper()
	r.note("get %q dst %d (clock %d)", key, dstLen, r.clock)
	dst := r.dst[:dstLen]
	for i := range dst {
		dst[i] = 0xA5
	}
	n, st := r.p.Get(r.hash(key), key, dst)
	e, held := r.held(key)
	switch {
	case !validKey(key):
		if st != StatusBadKey {
			r.fail("get bad key %q: %v", key, st)
		}
	case st == StatusOK:
		if !held {
			r.fail("get %q: hit on a key the model does not hold", key)
		}
		if n != len(e.val) || !bytes.Equal(dst[:n], e.val) {
			r.fail("get %q: WRONG VALUE (%d bytes, want %d)", key, n, len(e.val))
		}
	case st == StatusTooLarge:
		if !held || len(e.val) <= dstLen || n != len(e.val) {
			r.fail("get %q: too large n=%d dst %d, model held %v len %d", key, n, dstLen, held, len(e.val))
		}
		for _, c := range dst {
			if c != 0xA5 {
				r.fail("get %q: too large but dst written", key)
			}
		}
	case st == StatusNotFound:
		if held && r.p.mode == ModeStore {
			r.fail("get %q: store mode lost a key", key)
		}
		if !held {
			delete(r.m, string(key)) // expired
		}
	default:
		r.fail("get %q: %v", key, st)
	}
	r.after()
}

func (r *modelRun) del(key []byte) {
	r.t.Helper()
	r.note("del %q (clock %d)", key, r.clock)
	st := r.p.Delete(r.hash(key), key)
	_, held := r.held(key)
	switch {
	case !validKey(key):
		if st != StatusBadKey {
			r.fail("delete bad key %q: %v", key, st)
		}
	case st == StatusOK:
		if !held {
			r.fail("delete %q: ok for a key the model does not hold", key)
		}
	case st == StatusNotFound:
		if held && r.p.mode == ModeStore {
			r.fail("delete %q: store mode lost a key", key)
		}
	default:
		r.fail("delete %q: %v", key, st)
	}
	delete(r.m, string(key))
	if _, ok := r.peek(key); ok {
		r.fail("delete %q: still there", key)
	}
	r.after()
}

// keyFor makes key i: mostly short, some long, a few at the 250-byte limit.
func keyFor(i int) []byte {
	k := fmt.Appendf(nil, "k%d", i)
	switch i % 17 {
	case 3:
		k = append(k, bytes.Repeat([]byte{'x'}, 40)...)
	case 11:
		k = append(k, bytes.Repeat([]byte{'y'}, MaxKeyLen-len(k))...)
	}
	return k
}

func valueFor(rng *rand.Rand, maxValue int) []byte {
	var n int
	switch x := rng.IntN(100); {
	case x < 80:
		n = rng.IntN(65)
	case x < 95:
		n = 64 + rng.IntN(448)
	default:
		n = rng.IntN(maxValue + 1)
	}
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(rng.Uint32())
	}
	return v
}

func (r *modelRun) random(rng *rand.Rand, n, keys int) {
	for range n {
		key := keyFor(rng.IntN(keys))
		switch x := rng.IntN(100); {
		case x < 40:
			var ttl uint32
			if rng.IntN(5) == 0 {
				ttl = 1 + rng.Uint32N(10)
			}
			r.put(key, valueFor(rng, r.p.maxValue), ttl)
		case x < 80:
			r.get(key, len(r.dst))
		case x < 85:
			r.get(key, rng.IntN(40))
		case x < 93:
			r.del(key)
		case x < 96:
			r.clock += rng.Uint32N(4)
		case x < 98:
			r.put(key, make([]byte, r.p.maxValue+1), 0)
		default:
			bad := [][]byte{nil, {}, bytes.Repeat([]byte{'z'}, MaxKeyLen+1)}[rng.IntN(3)]
			switch rng.IntN(3) {
			case 0:
				r.put(bad, []byte("v"), 0)
			case 1:
				r.get(bad, 10)
			default:
				r.del(bad)
			}
		}
	}
	r.verify()
}

func TestModel(t *testing.T) {
	cases := []struct {
		name string
		c    modelCfg
	}{
		{"cache", modelCfg{}},
		{"cache-lru", modelCfg{lru: true}},
		{"cache-weakhash", modelCfg{weakHash: true, keys: 1000}},
		{"cache-lru-weakhash", modelCfg{lru: true, weakHash: true, keys: 1000}},
		{"cache-offset2^48", modelCfg{startAt: 1<<48 - 50_000}},
		{"cache-offset2^48-weakhash", modelCfg{startAt: 3<<48 - 50_000, weakHash: true, lru: true, keys: 1000}},
		{"store", modelCfg{mode: ModeStore}},
		{"store-full", modelCfg{mode: ModeStore, keys: 1000}},
		{"store-weakhash", modelCfg{mode: ModeStore, weakHash: true, keys: 1000}},
		{"store-offset2^48", modelCfg{mode: ModeStore, startAt: 1<<48 - 50_000, keys: 1000}},
		{"cache-lru-weakhash-atimes", modelCfg{lru: true, weakHash: true, keys: 1000, atimes: true}},
		{"store-full-atimes", modelCfg{mode: ModeStore, keys: 1000, atimes: true}},
	}
	ops := 20000
	if testing.Short() {
		ops = 4000
	}
	for _, tc := range cases {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", tc.name, seed), func(t *testing.T) {
				r := newModelRun(t, tc.c)
				defer r.close()
				rng := rand.New(rand.NewPCG(seed, 42))
				r.random(rng, ops, cmp.Or(tc.c.keys, 300))
				st := r.p.Stats()
				t.Logf("stats %+v, tail %d, spares used %d/%d, no-memory %d", st, r.p.tail-tc.c.startAt,
					r.p.spareNext-r.p.main, uint64(len(r.p.idx))/bucketWords-r.p.main, r.noMem)
				if tc.c.mode == ModeCache && st.Evictions == 0 {
					t.Errorf("cache run never evicted: the test is too gentle")
				}
				if tc.c.keys > 300 && tc.c.mode == ModeStore && r.noMem == 0 {
					t.Errorf("store run never ran out of memory: the test is too gentle")
				}
				if tc.c.weakHash && !r.dry {
					t.Errorf("weak-hash run never used up the spare buckets: the test is too gentle")
				}
			})
		}
	}
}
