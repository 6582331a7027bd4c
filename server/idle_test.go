package server

import (
	"testing"
	"time"
)

// TestIdlePartitionNapsThenSleeps: after its last request a partition with
// doorbells naps while still awake (from SpinIdle to napSpan times it),
// then blocks on its bell; a request after that is answered (the client
// rings).
func TestIdlePartitionNapsThenSleeps(t *testing.T) {
	ctx, srv, c := serveInProcess(t, 1)
	key := []byte("nap-key")
	if err := c.Put(ctx, key, []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	// Asleep, the partition publishes its counters: wait for a sleep
	// that follows naps.
	deadline := time.Now().Add(30 * time.Second)
	var st PartitionStats
	for {
		if all := srv.Stats(); len(all) == 1 { // none until first published
			st = all[0]
		}
		if st.Naps > 0 && st.Dozes > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st.Naps == 0 || st.Dozes == 0 {
		t.Fatalf("after its last request: %d naps, %d sleeps on the bell; want both", st.Naps, st.Dozes)
	}
	if _, err := c.Get(ctx, key); err != nil {
		t.Fatalf("GET after the partition slept: %v", err)
	}
}
