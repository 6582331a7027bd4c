package client_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/server"
)

// TestAlone: one caller at a time on shm runs its calls and batches in
// place, and a call or batch that meets company, a full ring or the bound
// joins the driver's way mid-flight (with the bound at 0, every one):
// either way each answer is its caller's and right.
// It runs in a process of its own: the poll groups are the process's,
// and other tests' clients, busy there, would keep its callers company.
func TestAlone(t *testing.T) {
	if os.Getenv("JAKIRO_TEST_ALONE") == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestAlone$", "-test.count", "1", "-test.v")
		cmd.Env = append(os.Environ(), "JAKIRO_TEST_ALONE=1")
		out, err := cmd.CombinedOutput()
		t.Logf("in a process of its own:\n%s", out)
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	// A partition that polls while idle: one blocked on its doorbell
	// when a call comes sends the call the driver's way (its yield lets
	// the woken partition run), and under the race detector, or beside
	// a busy core, a partition sleeps between two of this test's calls
	// often enough to make the counts below a matter of timing.
	c := dial(t, startServerWith(t, "shm", server.Config{IdlePoll: true}))
	ctx := context.Background()
	roundTrips := func(tag string, n int) {
		t.Helper()
		for i := range n {
			key := []byte(fmt.Sprintf("alone-%s-%d", tag, i%17))
			val := []byte(fmt.Sprintf("%s/%d", tag, i))
			if err := c.Put(ctx, key, val, 0); err != nil {
				t.Fatal(err)
			}
			got, err := c.Get(ctx, key)
			if err != nil || !bytes.Equal(got, val) {
				t.Fatalf("%s %d: got %q, %v; want %q", tag, i, got, err, val)
			}
		}
	}
	roundTrips("warm", 50)
	// A bound of a second, not 10 µs: under the race detector a call, and
	// a window of them, takes longer.
	old := client.SetAloneNS(int64(time.Second))
	before := client.Alones(c)
	roundTrips("alone", 500)
	if n := client.Alones(c) - before; n != 1000 {
		t.Fatalf("%d of 1000 calls of a lone caller ran alone", n)
	} else {
		t.Logf("%d of 1000 calls ran alone", n)
	}

	// Batches: a window's worth alone, and more than a window (the rest
	// queue, and the batch goes the driver's way).
	batches := func(tag string, size, n int) {
		t.Helper()
		var b client.Batch
		for i := range n {
			b.Reset()
			for j := range size {
				b.Put([]byte(fmt.Sprintf("alone-%s-%d", tag, j)), []byte(fmt.Sprintf("%s/%d/%d", tag, i, j)), 0)
			}
			if err := c.Run(ctx, &b); err != nil {
				t.Fatal(err)
			}
			b.Reset()
			for j := range size {
				b.Get([]byte(fmt.Sprintf("alone-%s-%d", tag, j)))
			}
			if err := c.Run(ctx, &b); err != nil {
				t.Fatal(err)
			}
			for j := range size {
				got, err := b.Result(j)
				if want := fmt.Sprintf("%s/%d/%d", tag, i, j); err != nil || string(got) != want {
					t.Fatalf("%s batch %d op %d: got %q, %v; want %q", tag, i, j, got, err, want)
				}
			}
		}
	}
	before = client.Alones(c)
	batches("window", 8, 100)
	if n := client.Alones(c) - before; n != 200 {
		t.Fatalf("%d of 200 batches of a lone caller ran alone", n)
	}
	batches("deep", 100, 20)
	client.SetAloneNS(old)

	old = client.SetAloneNS(0)
	before = client.Alones(c)
	roundTrips("joined", 500)
	batches("joined", 8, 50)
	client.SetAloneNS(old)
	if n := client.Alones(c) - before; n != 0 {
		t.Fatalf("%d calls ran alone past a bound of 0", n)
	}

	// Company comes and goes: callers that pause between calls meet
	// each other at random, mid-call or not.
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []byte(fmt.Sprintf("alone-company-%d", g))
			for i := range 300 {
				val := []byte(fmt.Sprintf("%d/%d", g, i))
				if err := c.Put(ctx, key, val, 0); err != nil {
					t.Error(err)
					return
				}
				got, err := c.Get(ctx, key)
				if err != nil || !bytes.Equal(got, val) {
					t.Errorf("goroutine %d: got %q, %v; want %q", g, got, err, val)
					return
				}
				if rand.IntN(4) == 0 {
					time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
				}
			}
		}()
	}
	wg.Wait()
}
