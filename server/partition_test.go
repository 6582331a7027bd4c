package server

import (
	"fmt"
	"testing"

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
