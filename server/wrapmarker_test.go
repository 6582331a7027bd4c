package server_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/rfp"
)

// wrapMarker is a request ring's wrap marker for seq, as the engine
// writes one (op 0xff, no key or value).
func wrapMarker(seq uint32) []byte { return request(seq, rfp.Op(0xff), nil, nil) }

// testWrapMarker: a client that writes wrap markers where no honest
// client does — at a lap's start, or at a lap's start again after a
// marker that sent the server there — loses its connection, and every
// partition goes on serving others.
func testWrapMarker(t *testing.T, addr string) {
	attack := func(what string, write func(r *rawClient)) {
		t.Helper()
		r := dialRaw(t, addr)
		write(r)
		select {
		case <-r.conn.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the attacker's connection is still open after 10 s", what)
		}
		honestEverywhere(t, addr, what)
	}
	attack("a marker at every ring's start", func(r *rawClient) {
		for p := range r.w.Layout.Partitions {
			if !r.sendOrGone(p, 1, wrapMarker(1)) {
				return // closed by the first markers already
			}
		}
	})
	attack("a marker, then the same marker at the next lap's start", func(r *rawClient) {
		r.send(0, 1, request(1, rfp.OpGet, []byte("k"), nil))
		r.status(0, 1, 5*time.Second)
		r.send(0, 2, wrapMarker(2)) // not at a lap's start: the server goes to the next one
		r.skipLap(0)
		r.send(0, 2, wrapMarker(2)) // and finds it again there
	})
}

// honestEverywhere has a fresh client PUT and GET keys of every
// partition, each call bounded: a partition that stopped fails it.
func honestEverywhere(t *testing.T, addr, after string) {
	t.Helper()
	c := dialT(t, addr)
	parts := c.Partitions()
	seen := make(map[int]bool)
	for i := 0; len(seen) < parts; i++ {
		k := []byte(fmt.Sprintf("after-marker-%d", i))
		p := rfp.PartitionOf(rfp.KeyHash(k), parts)
		if seen[p] {
			continue
		}
		seen[p] = true
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := c.Put(ctx, k, k, 0)
		var v []byte
		if err == nil {
			v, err = c.Get(ctx, k)
		}
		cancel()
		if err != nil || string(v) != string(k) {
			t.Fatalf("after %s: partition %d: %q %v", after, p, v, err)
		}
	}
	c.Close()
}

// wrapAttackChild is the attacker role "wrapattack" (envAttack:
// _,addr,conns): each of conns loops dialling, writing a wrap marker at
// the start of every partition's request ring, ringing the partitions and
// waiting for the server to close the connection (at most 2 s), then
// pausing 10 ms.
func wrapAttackChild() int {
	f := strings.Split(os.Getenv(envAttack), ",")
	addr := f[1]
	conns, _ := strconv.Atoi(f[2])
	return attackLoops(conns, func(attacked func()) {
		for {
			if err := wrapAttackOnce(addr); err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			attacked()
			// Paced, as the vanish loop: on 2 cores an unpaced loop
			// takes the honest client's core whatever the server does.
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func wrapAttackOnce(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	setup, err := fabric.Dial(ctx, addr, fabric.Options{})
	if err != nil {
		return err
	}
	hello := rfp.Hello{Version: rfp.Version, Proof: rfp.AuthProof(os.Getenv(rfp.AuthTokenEnv)), HasProof: true}
	conn, err := setup.Establish(ctx, hello.Put())
	if err != nil {
		return err
	}
	defer conn.Close()
	w, err := rfp.ParseWelcome(conn.PeerData())
	if err != nil {
		return err
	}
	l := w.Layout
	local, err := conn.Alloc(l.Size())
	if err != nil {
		return err
	}
	m := wrapMarker(1)
	for p := range l.Partitions {
		off := l.ReqBase(p)
		copy(local.Bytes()[off:], m)
		if err := fabric.Write(conn, local, off, w.Grant, uint64(off), len(m)); err != nil {
			return err
		}
		if rg, ok := conn.(fabric.Ringer); ok {
			rg.RingBell(p)
		}
	}
	select {
	case <-conn.Done():
	case <-time.After(2 * time.Second):
	}
	return nil
}
