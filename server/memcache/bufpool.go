package memcache

import (
	"math/bits"
	"sync"
)

// The value buffers commands grow (Cmd.grow, Cmd.body) and give back once
// answered (Cmd.release) are recycled through the door, by size class,
// instead of left to the collector: a connection streaming long values
// would otherwise leave garbage as fast as it answers, and the heap grows
// to twice what the connections hold before a collection frees it (50
// connections pipelining 60 KB gets: RSS +143 MB with fresh buffers).

// Size classes: quarter steps between powers of two, from pooledMin up
// to 2 MiB (a 1 MiB value, rfp.MaxValueLen, fits); at most 25% unused.
const (
	pooledMinBits = 12 // 4 KiB: smaller buffers stay with their command
	pooledMaxBits = 21
	nClasses      = (pooledMaxBits - pooledMinBits) * 4
)

type bufPool struct{ classes [nClasses]sync.Pool }

// sizeClass is n's class and that class's size; class -1 is not pooled.
func sizeClass(n int) (class, size int) {
	if n <= 1<<pooledMinBits || n > 1<<pooledMaxBits {
		return -1, n
	}
	b := bits.Len(uint(n - 1)) // 2^(b-1) < n <= 2^b
	step := 1 << (b - 3)
	q := (n - 1 - 1<<(b-1)) / step
	return (b-1-pooledMinBits)*4 + q, 1<<(b-1) + (q+1)*step
}

// get returns a buffer of at least n bytes, its length its capacity.
func (p *bufPool) get(n int) []byte {
	class, size := sizeClass(n)
	if class >= 0 {
		if b, ok := p.classes[class].Get().(*[]byte); ok {
			return *b
		}
	}
	return make([]byte, size)
}

// put gives b back; b must not be used after.
func (p *bufPool) put(b []byte) {
	if class, size := sizeClass(cap(b)); class >= 0 && size == cap(b) {
		b = b[:size]
		p.classes[class].Put(&b)
	}
}
