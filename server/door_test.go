package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/server"
	"github.com/jakiro-kv/jakiro/server/memcache"
)

// TestDoorSharesPartitions: the memcached door and RFP clients use the
// same partitions and memory: each reads what the other wrote, versions
// and flags included; a partition asleep on its bell is woken by the door;
// the door's commands count in the partitions' stats.
func TestDoorSharesPartitions(t *testing.T) {
	for _, fab := range []string{"shm", "tcp"} {
		t.Run(fab, func(t *testing.T) {
			listen := "tcp://127.0.0.1:0"
			if fab == "shm" {
				listen = "shm://" + filepath.Join(t.TempDir(), "jakiro.sock")
			}
			ctx := context.Background()
			srv, c, nc, r := doorWithClients(t, server.Config{Listen: listen, Partitions: 2, Memory: 64 << 20, MaxValue: 64 << 10})
			ask := func(req string) string {
				t.Helper()
				nc.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := nc.Write([]byte(req)); err != nil {
					t.Fatal(err)
				}
				var b strings.Builder
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						t.Fatalf("%q: %v", req, err)
					}
					b.WriteString(line)
					if line == "END\r\n" || line == "STORED\r\n" || line == "EXISTS\r\n" || !strings.HasPrefix(req, "get") {
						return b.String()
					}
				}
			}
			// Let the partitions fall asleep on their bells first.
			time.Sleep(50 * time.Millisecond)
			if _, err := c.Set(ctx, []byte("from-rfp"), []byte("hello"), 0, 7); err != nil {
				t.Fatal(err)
			}
			if got := ask("get from-rfp\r\n"); got != "VALUE from-rfp 7 5\r\nhello\r\nEND\r\n" {
				t.Fatalf("door get of an RFP write: %q", got)
			}
			time.Sleep(50 * time.Millisecond)
			if got := ask("set from-door 9 0 2\r\nhi\r\n"); got != "STORED\r\n" {
				t.Fatal(got)
			}
			it, err := c.GetItem(ctx, []byte("from-door"))
			if err != nil || string(it.Value) != "hi" || it.Flags != 9 {
				t.Fatalf("RFP gets of a door write: %+v %v", it, err)
			}
			want := fmt.Sprintf("VALUE from-door 9 2 %d\r\nhi\r\nEND\r\n", it.Version)
			if got := ask("gets from-door\r\n"); got != want {
				t.Fatalf("door gets %q, want %q (the same version)", got, want)
			}
			if got := ask(fmt.Sprintf("cas from-door 0 0 1 %d\r\nx\r\n", it.Version)); got != "STORED\r\n" {
				t.Fatalf("door cas with the RFP version: %q", got)
			}
			if _, err := c.CompareAndSwap(ctx, []byte("from-door"), []byte("y"), 0, 0, it.Version); err == nil {
				t.Fatal("RFP cas with a version the door replaced succeeded")
			}
			// Counters from both sides, at once.
			ask("set ctr 0 0 1\r\n0\r\n")
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 200 {
					if _, err := c.Incr(ctx, []byte("ctr"), 1); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			for range 200 {
				ask("incr ctr 1\r\n")
			}
			wg.Wait()
			if v, _ := c.Get(ctx, []byte("ctr")); string(v) != "400" {
				t.Fatalf("counter %s after 200 + 200 increments", v)
			}
			var n uint64
			for end := time.Now().Add(2 * time.Second); n < 400 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				n = 0 // the partitions publish their stats every 100 ms and before they sleep
				for _, p := range srv.Stats() {
					n += p.Served
				}
			}
			if n < 400 {
				t.Fatalf("partitions served %d, want the door's commands counted too", n)
			}
		})
	}
}

// TestDoorUnderLoadAndClose: connections hammer the door of partitions
// that lend their stores, an RFP client arrives meanwhile (the partitions
// take their stores back for its requests and lend them again once it is
// idle), then the server closes under them: nothing is lost before,
// nothing crashes after, every connection ends.
func TestDoorUnderLoadAndClose(t *testing.T) {
	listen := "shm://" + filepath.Join(t.TempDir(), "jakiro.sock")
	srv, err := server.New(server.Config{Listen: listen, Partitions: 2, Memory: 64 << 20, MaxValue: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(ctx) }()
	door, err := memcache.Listen(memcache.Config{Addr: "127.0.0.1:0", RunTimeout: 2 * time.Second}, srv.Door())
	if err != nil {
		t.Fatal(err)
	}
	doorDone := make(chan struct{})
	go func() { defer close(doorDone); door.Serve(ctx) }()
	var wg sync.WaitGroup
	counts := make([]int, 4)
	for i := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.DialTimeout("tcp", door.Addr(), 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			r := bufio.NewReader(nc)
			for n := 0; ; n++ {
				nc.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := fmt.Fprintf(nc, "incr c%d 1\r\n", i); err != nil {
					return
				}
				line, err := r.ReadString('\n')
				if err != nil {
					return // the server closed
				}
				if line == "NOT_FOUND\r\n" {
					fmt.Fprintf(nc, "set c%d 0 0 1\r\n0\r\n", i)
					r.ReadString('\n')
					continue
				}
				counts[i]++
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	c, err := client.Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := c.Put(ctx, []byte(fmt.Sprint("rfp", i)), []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	for i := range counts {
		v, err := c.Get(ctx, []byte(fmt.Sprint("c", i)))
		if err != nil || len(v) == 0 {
			t.Fatalf("counter c%d from the RFP side: %q %v", i, v, err)
		}
	}
	c.Close()
	srv.Close() // under the door's connections
	<-served
	closed := make(chan struct{})
	go func() { wg.Wait(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("door connections still running 10 s after the server closed")
	}
	door.Close()
	<-doorDone
	for i, n := range counts {
		if n == 0 {
			t.Errorf("connection %d got no increment through", i)
		}
	}
}

// TestDoorSeesRFPReads: an RFP client's GET is an access as the door's
// get is (memcached counts every fetch): mg's h flag says the item was
// hit before, and its l flag counts from the last RFP read.
func TestDoorSeesRFPReads(t *testing.T) {
	ctx := context.Background()
	_, c, nc, r := doorWithClients(t, server.Config{Listen: "shm://" + filepath.Join(t.TempDir(), "jakiro.sock"),
		Partitions: 1, Memory: 64 << 20, MaxValue: 64 << 10, AccessTimes: true})
	mg := func(flags string) string {
		t.Helper()
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(nc, "mg seen %s\r\n", flags); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	if err := c.Put(ctx, []byte("seen"), []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if got := mg("h u"); got != "HD h0\r\n" { // u: a look that does not count
		t.Fatalf("after an RFP write: %q, want HD h0", got)
	}
	if v, err := c.Get(ctx, []byte("seen")); err != nil || string(v) != "v" {
		t.Fatalf("RFP get: %q %v", v, err)
	}
	if got := mg("h u"); got != "HD h1\r\n" {
		t.Fatalf("after an RFP read: %q, want HD h1 (the RFP GET counts as a fetch)", got)
	}
	// l counts whole seconds from the last access: an RFP read 2 s
	// after the write resets it.
	time.Sleep(2100 * time.Millisecond)
	if got := mg("l u"); got == "HD l0\r\n" {
		t.Fatalf("2 s after the last access: %q", got)
	}
	if _, err := c.Get(ctx, []byte("seen")); err != nil {
		t.Fatal(err)
	}
	if got := mg("l u"); got != "HD l0\r\n" && got != "HD l1\r\n" { // l1: a second's edge in between
		t.Fatalf("right after an RFP read: %q, want HD l0", got)
	}
}

// doorWithClients serves cfg and a memcached door on a loopback port, and
// connects an RFP client and a connection to the door (with its reader),
// all closed when the test ends.
func doorWithClients(t *testing.T, cfg server.Config) (*server.Server, *client.Client, net.Conn, *bufio.Reader) {
	t.Helper()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(ctx) }()
	stop := func() { cancel(); srv.Close(); <-served }
	door, err := memcache.Listen(memcache.Config{Addr: "127.0.0.1:0"}, srv.Door())
	if err != nil {
		stop()
		t.Fatal(err)
	}
	doorDone := make(chan struct{})
	go func() { defer close(doorDone); door.Serve(ctx) }()
	t.Cleanup(func() { cancel(); door.Close(); <-doorDone; stop() })
	c, err := client.Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	nc, err := net.DialTimeout("tcp", door.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return srv, c, nc, bufio.NewReader(nc)
}
