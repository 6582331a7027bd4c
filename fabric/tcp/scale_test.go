package tcp

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabrictest"
)

// osThreads is this process's thread count, from /proc/self/status.
func osThreads(t testing.TB) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status to count threads:", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads: line in /proc/self/status")
	return 0
}

// maxThreads bounds the OS threads of a process holding thousands of
// connections: GOMAXPROCS, sysmon, the pollers, and a few for the test.
const maxThreads = 64

// Thousands of connections (both ends in this process) cost no thread
// each, and every one of them still works.
func TestThousandsOfConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 2,000 connections take a few seconds")
	}
	const conns = 2000
	ln := listen(t, fabric.Options{QueueDepth: 4})
	ctx := ctxT(t)
	type end struct {
		c fabric.Conn
		r *fabric.Region
	}
	acc := make(chan end, conns)
	go func() {
		for range conns {
			s, err := ln.Accept(ctx)
			if err != nil {
				close(acc)
				return
			}
			c, r, err := fabrictest.Grant(ctx, s, 64, nil, nil)
			if err != nil {
				close(acc)
				return
			}
			acc <- end{c, r}
		}
	}()
	dialers := make([]end, 0, conns)
	accepted := make([]end, 0, conns)
	t.Cleanup(func() {
		for _, e := range append(dialers, accepted...) {
			e.c.Close()
		}
	})
	for range conns {
		s, err := fabric.Dial(ctx, ln.Addr(), fabric.Options{QueueDepth: 4})
		if err != nil {
			t.Fatalf("dial %d: %v", len(dialers), err)
		}
		r, err := s.Alloc(64)
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.Establish(ctx, nil)
		if err != nil {
			t.Fatalf("establish %d: %v", len(dialers), err)
		}
		dialers = append(dialers, end{c, r})
		a, ok := <-acc
		if !ok {
			t.Fatalf("acceptor stopped after %d connections", len(accepted))
		}
		accepted = append(accepted, a)
	}
	if n := osThreads(t); n > maxThreads {
		t.Fatalf("%d OS threads with %d connections (both ends here), want at most %d", n, conns, maxThreads)
	}
	// Every connection serves a WRITE and a READ back, from a few
	// goroutines at once (thousands of goroutines in syscalls would grow
	// the runtime's threads whatever the fabric does).
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	work := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := pingPong(dialers[i].c, dialers[i].r); err != nil {
					errs <- fmt.Errorf("connection %d: %w", i, err)
				}
			}
		}()
	}
	for i := range dialers {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := osThreads(t); n > maxThreads {
		t.Fatalf("%d OS threads after traffic on %d connections, want at most %d", n, conns, maxThreads)
	}
}

// pingPong WRITEs to the peer's region and READs it back.
func pingPong(c fabric.Conn, r *fabric.Region) error {
	peer, err := fabric.ParseDesc(c.PeerData())
	if err != nil {
		return err
	}
	copy(r.Bytes(), "ping")
	if err := fabric.Write(c, r, 0, peer, 0, 4); err != nil {
		return err
	}
	if err := fabric.Read(c, r, 8, peer, 0, 4); err != nil {
		return err
	}
	if got := string(r.Bytes()[8:12]); got != "ping" {
		return errors.New("read back " + strconv.Quote(got))
	}
	return nil
}

// A peer that stops reading is cut off after SendTimeout: Post never
// blocks meanwhile, the connection ends with an error that says why, and
// the listener's other connections go on.
func TestStalledReader(t *testing.T) {
	o := fabric.Options{QueueDepth: 256, SendTimeout: 200 * time.Millisecond}
	ln := listen(t, o)
	_, c, r := rawConn(t, ln, 1<<16) // the raw peer never reads
	ops := []fabric.Op{{Kind: fabric.OpWrite, Local: r, Len: 1 << 16, Remote: fabric.Desc{Key: 1}}}
	posted := 0
	for {
		// Until the queue is full, or (on a slow machine) the timeout
		// already cut the peer off.
		if err := c.Post(ops); err != nil {
			if !errors.Is(err, fabric.ErrQueueFull) && !errors.Is(err, fabric.ErrPeerGone) {
				t.Fatalf("Post %d: %v", posted, err)
			}
			break
		}
		posted++
	}
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("a peer that read none of %d × 64 KiB is still connected after 30s", posted)
	}
	if err := c.Err(); !errors.Is(err, fabric.ErrPeerGone) || !strings.Contains(err.Error(), "stopped reading") {
		t.Fatalf("Err = %v, want ErrPeerGone saying the peer stopped reading", err)
	}
	var cs [256]fabric.Completion
	n, err := c.Poll(cs[:])
	if err != nil || n != posted {
		t.Fatalf("Poll = %d, %v; want the %d posted ops completed", n, err, posted)
	}
	for _, comp := range cs[:n] {
		if !errors.Is(comp.Err, fabric.ErrPeerGone) {
			t.Fatalf("op completed with %v, want ErrPeerGone", comp.Err)
		}
	}
	// The same listener still serves others.
	if err := servesNew(t, ln); err != nil {
		t.Fatal("another connection after the stall:", err)
	}
}

// servesNew connects to ln and READs a region of the acceptor's.
func servesNew(t *testing.T, ln fabric.Listener) error {
	d, a := pairOn(t, ln)
	dr, err := d.Alloc(64)
	if err != nil {
		return err
	}
	ar, err := a.Alloc(64)
	if err != nil {
		return err
	}
	copy(ar.Bytes(), "served")
	if err := fabric.Read(d, dr, 0, ar.Desc(), 0, 6); err != nil {
		return err
	}
	if got := string(dr.Bytes()[:6]); got != "served" {
		return fmt.Errorf("READ returned %q", got)
	}
	return nil
}
