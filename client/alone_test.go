package client_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
)

// TestAlone: one caller at a time on shm runs its calls in place, and a
// call that meets company or outlasts the bound joins the driver's way
// mid-flight (with the bound at 0, every one): either way each answer is
// its caller's and right.
func TestAlone(t *testing.T) {
	c := dial(t, startServer(t, "shm"))
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
	before := client.Alones(c)
	roundTrips("alone", 500)
	if n := client.Alones(c) - before; n == 0 {
		t.Fatal("no call of a lone caller ran alone")
	} else {
		t.Logf("%d of 1000 calls ran alone", n)
	}

	old := client.SetAloneNS(0)
	before = client.Alones(c)
	roundTrips("joined", 500)
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
