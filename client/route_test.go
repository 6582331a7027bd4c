package client

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/rfp"
)

func TestSplitAddrs(t *testing.T) {
	got, err := SplitAddrs(" tcp://a:1 ,shm:///tmp/b.sock")
	if err != nil || len(got) != 2 || got[0] != "tcp://a:1" || got[1] != "shm:///tmp/b.sock" {
		t.Fatalf("SplitAddrs = %q, %v", got, err)
	}
	for _, bad := range []string{"", "tcp://a:1,", "tcp://a:1,,tcp://b:1", "tcp://a:1,tcp://a:1"} {
		if _, err := SplitAddrs(bad); err == nil {
			t.Errorf("SplitAddrs(%q) accepted", bad)
		}
	}
}

func keys(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "user%08d", i)
	}
	return out
}

// Keys spread evenly, adding a server moves about 1/N of them (all to the
// new one), and within a server the keys still spread over its
// partitions: the server hash must not follow the partition hash.
func TestRouterSpreadAndMoves(t *testing.T) {
	ks := keys(30000)
	three := []string{"tcp://127.0.0.1:7001", "tcp://127.0.0.1:7002", "shm:///tmp/j3.sock"}
	r3 := newRouter(three)
	count := make([]int, 3)
	const parts = 4
	perPart := make([][parts]int, 3)
	for _, k := range ks {
		s := r3.pick(k)
		count[s]++
		perPart[s][rfp.PartitionOf(rfp.KeyHash(k), parts)]++
	}
	even := float64(len(ks)) / 3
	for s, n := range count {
		if math.Abs(float64(n)-even) > 0.05*even {
			t.Errorf("server %d has %d keys, even is %.0f", s, n, even)
		}
		for p, m := range perPart[s] {
			if e := float64(n) / parts; math.Abs(float64(m)-e) > 0.1*e {
				t.Errorf("server %d partition %d has %d of %d keys", s, p, m, n)
			}
		}
	}
	// Order does not matter.
	rev := newRouter([]string{three[2], three[0], three[1]})
	for _, k := range ks[:1000] {
		if three[r3.pick(k)] != []string{three[2], three[0], three[1]}[rev.pick(k)] {
			t.Fatalf("key %s routes differently when the list is reordered", k)
		}
	}
	four := append(append([]string{}, three...), "tcp://127.0.0.1:7004")
	r4 := newRouter(four)
	moved := 0
	for _, k := range ks {
		a, b := r3.pick(k), r4.pick(k)
		if a != b {
			moved++
			if b != 3 {
				t.Fatalf("key %s moved from server %d to old server %d", k, a, b)
			}
		}
	}
	if f := float64(moved) / float64(len(ks)); math.Abs(f-0.25) > 0.03 {
		t.Errorf("adding a 4th server moved %.3f of the keys, want about 0.25", f)
	}
}

func TestRouterPickAllocatesNothing(t *testing.T) {
	r := newRouter([]string{"tcp://a:1", "tcp://b:1", "tcp://c:1"})
	k := []byte("some-key")
	if n := testing.AllocsPerRun(100, func() { r.pick(k) }); n != 0 {
		t.Errorf("pick allocates %.0f times", n)
	}
}

func TestBackoffCappedAndJittered(t *testing.T) {
	seen := map[time.Duration]bool{}
	for n := range 40 {
		d := backoff(n)
		if d < backoffMin/2 || d > backoffMax {
			t.Fatalf("backoff(%d) = %v outside [%v, %v]", n, d, backoffMin/2, backoffMax)
		}
		if n >= 10 && d < backoffMax/2 {
			t.Fatalf("backoff(%d) = %v: not grown to the cap", n, d)
		}
		seen[d] = true
	}
	if len(seen) < 30 {
		t.Errorf("backoff draws %d distinct waits of 40: no jitter", len(seen))
	}
}
