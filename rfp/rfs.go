package rfp

// AutoRFS learns the value sizes a client sees and keeps the remote fetch
// size covering about their 95th percentile, so mixed-size workloads stay
// near two round trips per operation. It is a pure state machine.
type AutoRFS struct {
	counts [rfsBuckets]uint32
	total  uint32
	since  uint32
	rfs    int
	min    int
	max    int
}

// Size buckets: 8-byte steps to 512 B, then 64-byte steps to 4 KiB, then
// powers of two; enough resolution where RFS matters (small values).
const rfsBuckets = 64 + 56 + 12

func rfsBucket(n int) int {
	switch {
	case n <= 512:
		return (n + 7) / 8
	case n <= 4096:
		return 64 + (n-512+63)/64
	}
	b, v := 120, 8192
	for v < n && b < rfsBuckets-1 {
		v <<= 1
		b++
	}
	return b
}

func rfsBucketTop(b int) int {
	switch {
	case b <= 64:
		return b * 8
	case b <= 120:
		return 512 + (b-64)*64
	}
	return 8192 << (b - 120)
}

const (
	rfsWindow = 4096 // samples after which old counts are halved
	rfsRecalc = 64   // samples between percentile recomputations
)

// NewAutoRFS starts at start bytes and stays within [MinRFS, max].
func NewAutoRFS(start, max int) *AutoRFS {
	a := &AutoRFS{rfs: start, min: MinRFS, max: max}
	a.clamp()
	return a
}

func (a *AutoRFS) clamp() {
	if a.rfs < a.min {
		a.rfs = a.min
	}
	if a.rfs > a.max {
		a.rfs = a.max
	}
}

// RFS is the fetch size to use now.
func (a *AutoRFS) RFS() int { return a.rfs }

// Observe records the length of a value fetched.
func (a *AutoRFS) Observe(n int) {
	a.counts[rfsBucket(n)]++
	a.total++
	a.since++
	if a.total >= rfsWindow {
		a.total = 0
		for i := range a.counts {
			a.counts[i] /= 2
			a.total += a.counts[i]
		}
	}
	if a.since >= rfsRecalc {
		a.since = 0
		a.recalc()
	}
}

func (a *AutoRFS) recalc() {
	var sum uint32
	for _, c := range a.counts {
		sum += c
	}
	if sum == 0 {
		return
	}
	want := sum - sum/20 // 95th percentile
	var acc uint32
	for b, c := range a.counts {
		acc += c
		if acc >= want {
			a.rfs = RFSFor(rfsBucketTop(b))
			a.clamp()
			return
		}
	}
}
