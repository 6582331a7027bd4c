package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/server/memcache"
)

// TestLendsBesideIdleClient: a partition whose RFP client is idle sleeps
// and lends its store, so the door's commands run on the connections
// without a ring; the client's next request takes the store back.
func TestLendsBesideIdleClient(t *testing.T) {
	srv, err := New(Config{Listen: "shm://" + filepath.Join(t.TempDir(), "l.sock"), Partitions: 1, Memory: 16 << 20, MaxValue: 1024})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go srv.Serve(ctx)
	defer srv.Close()
	door, err := memcache.Listen(memcache.Config{Addr: "127.0.0.1:0"}, srv.Door())
	if err != nil {
		t.Fatal(err)
	}
	go door.Serve(ctx)
	defer door.Close()
	c, err := client.Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	listed(t, srv, 1)
	if err := c.Put(ctx, []byte("k"), []byte("rfp"), 0); err != nil {
		t.Fatal(err)
	}
	p := srv.parts[0]
	nc, err := net.DialTimeout("tcp", door.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(nc)
	// A partition asleep still wakes for its housekeeping (up to a second
	// apart): one that woke during the sets rightly took a ring. A store
	// that is not lent rings at every set, in every attempt.
	var rang []uint64
	for attempt := 0; attempt < 3; attempt++ {
		for deadline := time.Now().Add(30 * time.Second); p.seen.Load() != asleep; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the partition of an idle client never slept")
			}
		}
		rings := srv.ln.BellRings(0)
		for i := range 50 {
			fmt.Fprintf(nc, "set k 0 0 %d\r\ndoor%d\r\n", len(fmt.Sprint("door", i)), i)
			if line, err := r.ReadString('\n'); err != nil || line != "STORED\r\n" {
				t.Fatalf("set %d: %q %v", i, line, err)
			}
		}
		if rang = append(rang, srv.ln.BellRings(0)-rings); rang[attempt] == 0 {
			break
		}
	}
	if rang[len(rang)-1] != 0 {
		t.Errorf("the door rang the sleeping partition %v times in %d attempts of 50 sets: it did not lend its store", rang, len(rang))
	}
	if v, err := c.Get(ctx, []byte("k")); err != nil || string(v) != "door49" {
		t.Fatalf("the RFP client reads %q, %v after the door's sets", v, err)
	}
}
