package fabrictest

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// testConcurrent runs 16 connections at once, each from its own
// goroutine, each writing and verifying its own data; at the end every
// acceptor-side region must hold exactly its own dialer's data.
func testConcurrent(t *testing.T, newAddr func(*testing.T) string) {
	const (
		conns  = 16
		size   = 64 << 10
		rounds = 20
	)
	ln := listen(t, newAddr, fabric.Options{})
	ctx := ctxFor(t)

	// Acceptor: grant each dialer a region, remember it by the dialer's
	// index (dial data after the Desc).
	type granted struct {
		c   fabric.Conn
		r   *fabric.Region
		idx int
	}
	acc := make(chan granted, conns)
	accErr := make(chan error, 1)
	go func() {
		for i := 0; i < conns; i++ {
			s, err := ln.Accept(ctx)
			if err != nil {
				accErr <- err
				return
			}
			pd := s.PeerData()
			if len(pd) != fabric.DescSize+4 {
				s.Close()
				accErr <- fmt.Errorf("dial data of %d bytes", len(pd))
				return
			}
			c, r, err := Grant(ctx, s, size, nil, nil)
			if err != nil {
				accErr <- err
				return
			}
			acc <- granted{c, r, int(binary.LittleEndian.Uint32(pd[fabric.DescSize:]))}
		}
		accErr <- nil
	}()

	var wg sync.WaitGroup
	errs := make(chan error, conns)
	dialers := make([]fabric.Conn, conns)
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := worker(ctx, ln.Addr(), i, size, rounds)
			dialers[i] = c
			if err != nil {
				errs <- fmt.Errorf("conn %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	defer func() {
		for _, c := range dialers {
			if c != nil {
				c.Close()
			}
		}
	}()
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	if err := <-accErr; err != nil {
		t.Fatalf("acceptor: %v", err)
	}
	close(acc)
	seen := map[int]bool{}
	deadline := time.Now().Add(caseTimeout)
	for g := range acc {
		t.Cleanup(func() { g.c.Close() })
		if g.idx < 0 || g.idx >= conns || seen[g.idx] {
			t.Fatalf("bad or duplicate dialer index %d", g.idx)
		}
		seen[g.idx] = true
		if err := eventuallyBy(g.r.Bytes(), 0, pattern(finalSeed(g.idx), size), nil, deadline); err != nil {
			t.Errorf("region of conn %d: %v", g.idx, err)
		}
	}
}

func finalSeed(i int) uint64 { return uint64(1<<20 + i) }

// worker dials, then for each round WRITEs a fresh pattern at a varying
// offset and READs it back; it finally WRITEs the whole region.
func worker(ctx context.Context, addr string, idx, size, rounds int) (fabric.Conn, error) {
	s, err := fabric.Dial(ctx, addr, fabric.Options{})
	if err != nil {
		return nil, err
	}
	c, local, err := Grant(ctx, s, 2*size, nil, binary.LittleEndian.AppendUint32(nil, uint32(idx)))
	if err != nil {
		return nil, err
	}
	remote, err := fabric.ParseDesc(c.PeerData())
	if err != nil {
		return c, err
	}
	lm := local.Bytes()
	for r := 0; r < rounds; r++ {
		n := 1 + (r*997+idx*31)%(size/2)
		off := (r * 4099) % (size - n)
		w := pattern(uint64(idx<<16|r), n)
		copy(lm, w)
		clear(lm[size : size+n])
		if err := execOK(c,
			write(local, 0, remote, uint64(off), n, uint64(2*r)),
			read(local, size, remote, uint64(off), n, uint64(2*r+1))); err != nil {
			return c, fmt.Errorf("round %d: %w", r, err)
		}
		if err := equal(fmt.Sprintf("round %d READ back", r), lm[size:size+n], w); err != nil {
			return c, err
		}
	}
	copy(lm, pattern(finalSeed(idx), size))
	return c, execOK(c, write(local, 0, remote, 0, size, 1<<32))
}
