package kv

import (
	"fmt"
	"strings"
	"testing"
)

// A lowered limit holds after the next writes (cache mode evicts down to
// it, store mode refuses past it), the invariants hold, and raising it
// gives the room back.
func TestSetLimit(t *testing.T) {
	for _, mode := range []Mode{ModeCache, ModeStore} {
		p, _ := newTestStore(t, Config{Mode: mode, Memory: 1 << 20, MaxValue: 1 << 10})
		full := p.Stats().Capacity
		v := strings.Repeat("v", 200)
		fill := func() (stored int) {
			for i := range 20000 {
				k := fmt.Sprintf("k%d", i)
				if p.Put(p.hashFn([]byte(k)), []byte(k), []byte(v), 0) == StatusOK {
					stored++
				}
			}
			return stored
		}
		fill()
		if p.Stats().Bytes < full/2 {
			t.Fatalf("%v: only %d of %d bytes used", mode, p.Stats().Bytes, full)
		}
		lim := p.SetLimit(full / 4)
		if lim != full/4 || p.Stats().Capacity != lim {
			t.Fatalf("%v: limit %d, capacity %d, want %d", mode, lim, p.Stats().Capacity, full/4)
		}
		if mode == ModeStore {
			for i := range 20000 { // make room: store mode does not evict
				k := fmt.Sprintf("k%d", i)
				p.Delete(p.hashFn([]byte(k)), []byte(k))
			}
		}
		fill()
		if b := p.Stats().Bytes; b > lim {
			t.Fatalf("%v: %d bytes live over the limit %d", mode, b, lim)
		}
		if err := p.check(); err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		if got := p.SetLimit(1); got != MinLimit(1<<10) {
			t.Fatalf("%v: limit 1 set %d, want the minimum %d", mode, got, MinLimit(1<<10))
		}
		if got := p.SetLimit(full * 2); got != full {
			t.Fatalf("%v: limit past the capacity set %d, want %d", mode, got, full)
		}
		fill()
		if b := p.Stats().Bytes; b <= lim {
			t.Fatalf("%v: raised limit, still %d bytes live", mode, b)
		}
		if err := p.check(); err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
	}
}
