package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/kv"
	"github.com/jakiro-kv/jakiro/rfp"
)

// The client picks the ring with rfp.PartitionOf and the server's store
// with kv's: they must agree for every key, or EREW breaks.
func TestClientAndStoreAgreeOnPartitions(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7, 16} {
		st, err := kv.New(kv.Config{Partitions: n, Memory: int64(n) << 22, MaxValue: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 10000; i++ {
			k := []byte(fmt.Sprintf("key-%d", i))
			h := kv.Hash(k)
			if h != rfp.KeyHash(k) {
				t.Fatal("hashes differ")
			}
			if a, b := rfp.PartitionOf(h, n), st.PartitionOf(h); a != b {
				t.Fatalf("n=%d key %s: client partition %d, store %d", n, k, a, b)
			}
		}
		st.Close()
	}
}

// A partition never blocks sooner than its fabric's clients count on it:
// at least IdleBeforeSleep, and on tcp TCPIdleBeforeSleep, whatever
// --spin says.
func TestSpinIdleFloorPerFabric(t *testing.T) {
	for _, c := range []struct {
		listen string
		want   time.Duration
	}{{"shm:///tmp/x.sock", time.Duration(rfp.IdleBeforeSleep)}, {"tcp://127.0.0.1:0", time.Duration(rfp.TCPIdleBeforeSleep)}} {
		cfg, err := Config{Listen: c.listen, SpinIdle: time.Microsecond}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.SpinIdle != c.want {
			t.Errorf("%s: SpinIdle %v, want %v", c.listen, cfg.SpinIdle, c.want)
		}
	}
}
