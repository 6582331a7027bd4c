package kv

import (
	"math/rand/v2"
	"testing"
)

// FuzzOps runs operation sequences decoded from the fuzzer's bytes against
// a small partition and the model (see model_test.go), checking the
// partition's invariants every 16 operations and at the end.
//
//	go test ./kv -run '^$' -fuzz FuzzOps -fuzztime 1m -fuzzminimizetime 100x
//
// Byte 0 picks the configuration: bit 0 store mode, bit 1 ApproxLRU, bit 2
// a weak hash (colliding tags and chains), bit 3 a log starting just below
// 2^48. Then every 3 bytes are an operation: kind, key, argument.
func FuzzOps(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for cfg := range 16 {
		seed := []byte{byte(cfg)}
		for range 600 {
			seed = append(seed, byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32()))
		}
		f.Add(seed)
	}
	f.Add([]byte{0, 0, 1, 255, 3, 1, 0, 5, 1, 0, 3, 1, 0})
	f.Fuzz(fuzzOps)
}

// fuzzOps is FuzzOps's body.
func fuzzOps(t *testing.T, data []byte) {
	if len(data) == 0 {
		return
	}
	c := modelCfg{memory: 64 << 10, maxValue: 1024}
	if data[0]&1 != 0 {
		c.mode = ModeStore
	}
	c.lru = data[0]&2 != 0
	c.weakHash = data[0]&4 != 0
	if data[0]&8 != 0 {
		c.startAt = 1<<48 - 20_000
	}
	r := newModelRun(t, c)
	defer r.close()
	for ops := data[1:]; len(ops) >= 3; ops = ops[3:] {
		key := keyFor(int(ops[1] % 64))
		arg := int(ops[2])
		switch ops[0] % 10 {
		case 0, 1, 2:
			r.put(key, fuzzValue(arg, r.p.maxValue), 0)
		case 3:
			r.put(key, fuzzValue(arg, r.p.maxValue), uint32(arg%8+1))
		case 4, 5, 6:
			r.get(key, len(r.dst))
		case 7:
			r.get(key, arg%48)
		case 8:
			r.del(key)
		case 9:
			r.clock += uint32(arg % 4)
		}
	}
	r.verify()
}

// fuzzValue makes a value whose length and bytes follow from arg: mostly
// short, sometimes up to maxValue.
func fuzzValue(arg, maxValue int) []byte {
	n := arg % 64
	if arg >= 200 {
		n = (arg - 200) * maxValue / 55
	}
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(arg + i)
	}
	return v
}
