package fabrictest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

const (
	// caseTimeout bounds every handshake and wait of a case.
	caseTimeout = 30 * time.Second
	// goneTimeout bounds how long peer death may take to be reported.
	goneTimeout = 5 * time.Second
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	t.Cleanup(cancel)
	return ctx
}

func listen(t *testing.T, newAddr func(*testing.T) string, o fabric.Options) fabric.Listener {
	t.Helper()
	ln, err := fabric.Listen(newAddr(t), o)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// pair is one established connection seen from both ends, each end having
// granted the other one region.
// Pair is one connection seen from both ends.
type Pair struct {
	D, A       fabric.Conn    // dialer's and acceptor's ends
	DReg, AReg *fabric.Region // the regions each end granted
	ToA, ToD   fabric.Desc    // what D uses to reach AReg, A to reach DReg
}

// connect establishes a pair: the dialer sends its region's Desc as dial
// data and the acceptor answers with its own.
func connect(t *testing.T, ln fabric.Listener, o fabric.Options, dsize, asize int) *Pair {
	t.Helper()
	p, err := Connect(ctxFor(t), ln, o, dsize, asize, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.D.Close(); p.A.Close() })
	return p
}

// Connect is connect without a testing.T, for child processes and
// benchmarks: extra follows the dialer's Desc in its dial data.
func Connect(ctx context.Context, ln fabric.Listener, o fabric.Options, dsize, asize int, extra []byte) (*Pair, error) {
	type res struct {
		c   fabric.Conn
		r   *fabric.Region
		d   fabric.Desc
		err error
	}
	ach := make(chan res, 1)
	go func() {
		a, r, d, err := AcceptGrant(ctx, ln, asize, nil)
		ach <- res{a, r, d, err}
	}()
	s, err := fabric.Dial(ctx, ln.Addr(), o)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	d, dreg, err := Grant(ctx, s, dsize, nil, extra)
	if err != nil {
		return nil, fmt.Errorf("dialer %w", err)
	}
	ar := <-ach
	if ar.err != nil {
		d.Close()
		return nil, ar.err
	}
	toA, err := fabric.ParseDesc(d.PeerData())
	if err != nil {
		d.Close()
		ar.c.Close()
		return nil, fmt.Errorf("dialer: accept data: %w", err)
	}
	return &Pair{D: d, A: ar.c, DReg: dreg, AReg: ar.r, ToA: toA, ToD: ar.d}, nil
}

// Grant allocates a region of size bytes on s (passed to fill first, if
// not nil), sends its Desc followed by extra as private data, and
// establishes the connection. On error s is closed.
func Grant(ctx context.Context, s fabric.Setup, size int, fill func([]byte), extra []byte) (fabric.Conn, *fabric.Region, error) {
	r, err := s.Alloc(size)
	if err != nil {
		s.Close()
		return nil, nil, fmt.Errorf("Alloc(%d): %w", size, err)
	}
	if fill != nil {
		fill(r.Bytes())
	}
	data := make([]byte, fabric.DescSize, fabric.DescSize+len(extra))
	r.Desc().Put(data)
	c, err := s.Establish(ctx, append(data, extra...))
	if err != nil {
		s.Close()
		return nil, nil, fmt.Errorf("establish: %w", err)
	}
	return c, r, nil
}

// AcceptGrant accepts one connection, grants it a region of size bytes
// (passed to fill, if not nil, before the grant) and returns the
// connection, the region and the dialer's Desc.
func AcceptGrant(ctx context.Context, ln fabric.Listener, size int, fill func([]byte)) (fabric.Conn, *fabric.Region, fabric.Desc, error) {
	s, err := ln.Accept(ctx)
	if err != nil {
		return nil, nil, fabric.Desc{}, fmt.Errorf("accept: %w", err)
	}
	peer, err := fabric.ParseDesc(s.PeerData())
	if err != nil {
		s.Close()
		return nil, nil, fabric.Desc{}, fmt.Errorf("acceptor: dial data: %w", err)
	}
	c, r, err := Grant(ctx, s, size, fill, nil)
	if err != nil {
		return nil, nil, fabric.Desc{}, fmt.Errorf("acceptor %w", err)
	}
	return c, r, peer, nil
}

// do posts ops as one batch and reaps their completions, or fails after
// caseTimeout. It does not judge the completions.
func do(c fabric.Conn, ops ...fabric.Op) ([]fabric.Completion, error) {
	if err := c.Post(ops); err != nil {
		return nil, fmt.Errorf("post: %w", err)
	}
	return reap(c, len(ops))
}

func reap(c fabric.Conn, n int) ([]fabric.Completion, error) {
	cs := make([]fabric.Completion, n)
	got := 0
	deadline := time.Now().Add(caseTimeout)
	for spins := 0; got < n; spins++ {
		k, err := c.Poll(cs[got:])
		if err != nil {
			return nil, fmt.Errorf("poll after %d of %d completions: %w", got, n, err)
		}
		got += k
		if k == 0 && spins&1023 == 1023 {
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("only %d of %d completions after %v", got, n, caseTimeout)
			}
			runtime.Gosched()
		}
	}
	return cs, nil
}

// execOK runs ops and requires each to succeed, in order.
func execOK(c fabric.Conn, ops ...fabric.Op) error {
	cs, err := do(c, ops...)
	if err != nil {
		return err
	}
	return checkCompletions(ops, cs, nil)
}

// checkCompletions requires cs to match ops one to one in order, with
// error want (errors.Is; nil means success).
func checkCompletions(ops []fabric.Op, cs []fabric.Completion, want error) error {
	for i := range ops {
		if cs[i].ID != ops[i].ID || cs[i].Kind != ops[i].Kind {
			return fmt.Errorf("completion %d is {id %d %v}, want {id %d %v}", i, cs[i].ID, cs[i].Kind, ops[i].ID, ops[i].Kind)
		}
		if !isErr(cs[i].Err, want) {
			return fmt.Errorf("completion %d (id %d %v): err %v, want %v", i, cs[i].ID, cs[i].Kind, cs[i].Err, want)
		}
	}
	return nil
}

func isErr(err, want error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want)
}

func read(local *fabric.Region, loff int, remote fabric.Desc, roff uint64, n int, id uint64) fabric.Op {
	return fabric.Op{Kind: fabric.OpRead, ID: id, Local: local, LocalOff: loff, Len: n, Remote: remote, RemoteOff: roff}
}

func write(local *fabric.Region, loff int, remote fabric.Desc, roff uint64, n int, id uint64) fabric.Op {
	return fabric.Op{Kind: fabric.OpWrite, ID: id, Local: local, LocalOff: loff, Len: n, Remote: remote, RemoteOff: roff}
}

// pattern returns n pseudo-random nonzero-heavy bytes determined by seed.
func pattern(seed uint64, n int) []byte {
	b := make([]byte, n)
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x) | 1
	}
	return b
}

// eventually waits until mem[off:off+len(want)] equals want: a WRITE's
// completion does not imply the target CPU sees it yet.
func eventually(mem []byte, off int, want []byte) error {
	return eventuallyOr(mem, off, want, nil)
}

// eventuallyOr is eventually, giving up early when abort is closed.
func eventuallyOr(mem []byte, off int, want []byte, abort <-chan struct{}) error {
	return eventuallyBy(mem, off, want, abort, time.Now().Add(caseTimeout))
}

// eventuallyBy waits until deadline, so that many checks share one bound.
func eventuallyBy(mem []byte, off int, want []byte, abort <-chan struct{}, deadline time.Time) error {
	for !bytes.Equal(mem[off:off+len(want)], want) {
		select {
		case <-abort:
			return errors.New("gave up waiting for target bytes: the other side ended")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("target bytes [%d,%d) never became the written data (first difference at %d)",
				off, off+len(want), off+firstDiff(mem[off:off+len(want)], want))
		}
		time.Sleep(100 * time.Microsecond)
	}
	return nil
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func equal(what string, got, want []byte) error {
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s: %d bytes differ from expected, first at %d", what, len(want), firstDiff(got, want))
	}
	return nil
}

// waitDone waits for c.Done and returns how long it took.
func waitDone(c fabric.Conn, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	select {
	case <-c.Done():
		return time.Since(start), nil
	case <-time.After(limit):
		return limit, fmt.Errorf("conn.Done not closed within %v of the peer going", limit)
	}
}
