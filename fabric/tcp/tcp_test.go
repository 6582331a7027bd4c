package tcp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
	"github.com/jakiro-kv/jakiro/fabric/fabrictest"
	"golang.org/x/sys/unix"
)

// TestMain lets the conformance suite and the benchmarks re-execute this
// binary as a peer.
func TestMain(m *testing.M) {
	fabricbench.ServeChildIfRequested()
	if os.Getenv(envVanish) != "" {
		if err := vanishChild(); err != nil {
			fmt.Fprintln(os.Stderr, "vanish child:", err)
			os.Exit(1)
		}
		return
	}
	fabrictest.Main(m)
}

// The suite dials ln.Addr(), so port 0 is a fresh address every time.
func TestConformance(t *testing.T) {
	fabrictest.Run(t, func(t *testing.T) string { return "tcp://127.0.0.1:0" })
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func listen(t testing.TB, o fabric.Options) fabric.Listener {
	t.Helper()
	ln, err := fabric.Listen("tcp://127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// pair connects a dialer to a fresh listener. Each side allocates a region
// of size bytes and grants it to the other through the private data.
type side struct {
	c    fabric.Conn
	mine *fabric.Region
	peer fabric.Desc // the other side's region
}

func pair(t testing.TB, size int, o fabric.Options) (dialer, acceptor side) {
	t.Helper()
	ln := listen(t, o)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	var aerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, r, peer, err := fabrictest.AcceptGrant(ctx, ln, size, nil)
		acceptor, aerr = side{c: c, mine: r, peer: peer}, err
	}()
	s, err := fabric.Dial(ctx, ln.Addr(), o)
	if err != nil {
		t.Fatal(err)
	}
	c, r, err := fabrictest.Grant(ctx, s, size, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if aerr != nil {
		t.Fatal(aerr)
	}
	dialer = side{c: c, mine: r}
	if dialer.peer, err = fabric.ParseDesc(c.PeerData()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dialer.c.Close(); acceptor.c.Close() })
	return dialer, acceptor
}

// wait polls until n completions arrived or the deadline passed.
func wait(t testing.TB, c fabric.Conn, n int) []fabric.Completion {
	t.Helper()
	var out []fabric.Completion
	cs := make([]fabric.Completion, 16)
	deadline := time.Now().Add(10 * time.Second)
	for len(out) < n {
		k, err := c.Poll(cs)
		if err != nil {
			t.Fatalf("Poll after %d of %d completions: %v", len(out), n, err)
		}
		out = append(out, cs[:k]...)
		if k == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d completions after 10s", len(out), n)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	return out
}

func TestReadWriteBothWays(t *testing.T) {
	d, a := pair(t, 4096, fabric.Options{})
	for _, s := range []side{d, a} {
		msg := []byte("one-sided " + s.mine.Desc().String())
		copy(s.mine.Bytes()[100:], msg)
		if err := fabric.Write(s.c, s.mine, 100, s.peer, 1000, len(msg)); err != nil {
			t.Fatal(err)
		}
		if err := fabric.Read(s.c, s.mine, 2000, s.peer, 1000, len(msg)); err != nil {
			t.Fatal(err)
		}
		if got := s.mine.Bytes()[2000 : 2000+len(msg)]; !bytes.Equal(got, msg) {
			t.Fatalf("read back %q, want %q", got, msg)
		}
	}
	// Each side's write landed in the other's region, untouched by it.
	if !bytes.HasPrefix(a.mine.Bytes()[1000:], []byte("one-sided ")) || !bytes.HasPrefix(d.mine.Bytes()[1000:], []byte("one-sided ")) {
		t.Fatal("writes did not land in the target regions")
	}
}

func TestBatchOrderAndLargeOps(t *testing.T) {
	const size = 4 << 20
	d, a := pair(t, size, fabric.Options{QueueDepth: 64})
	src := d.mine.Bytes()
	for i := range src {
		src[i] = byte(i * 7)
	}
	// A batch mixing big and tiny ops: completions in posting order, and a
	// READ after a WRITE to the same place sees it.
	ops := []fabric.Op{
		{Kind: fabric.OpWrite, ID: 1, Local: d.mine, LocalOff: 0, Len: size / 2, Remote: a.mine.Desc()},
		{Kind: fabric.OpRead, ID: 2, Local: d.mine, LocalOff: size / 2, Len: size / 2, Remote: a.mine.Desc()},
		{Kind: fabric.OpWrite, ID: 3, Local: d.mine, LocalOff: 5, Len: 0, Remote: a.mine.Desc(), RemoteOff: size},
		{Kind: fabric.OpRead, ID: 4, Local: d.mine, LocalOff: 0, Len: 1, Remote: a.mine.Desc(), RemoteOff: size - 1},
	}
	if err := d.c.Post(ops); err != nil {
		t.Fatal(err)
	}
	cs := wait(t, d.c, len(ops))
	for i, c := range cs {
		if c.ID != ops[i].ID || c.Kind != ops[i].Kind || c.Err != nil {
			t.Fatalf("completion %d = %+v, want id %d kind %v ok", i, c, ops[i].ID, ops[i].Kind)
		}
	}
	if !bytes.Equal(src[:size/2], src[size/2:]) {
		t.Fatal("READ after WRITE did not return the written bytes")
	}
}

func TestPrivateDataAndReject(t *testing.T) {
	ln := listen(t, fabric.Options{})
	ctx := ctxT(t)
	dialData := bytes.Repeat([]byte{'d'}, fabric.MaxDialData)
	acceptData := bytes.Repeat([]byte{'a'}, fabric.MaxAcceptData)
	got := make(chan []byte, 2)
	go func() {
		for i := 0; ; i++ {
			s, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			got <- s.PeerData()
			if i == 0 {
				if _, err := s.Establish(ctx, make([]byte, fabric.MaxAcceptData+1)); !errors.Is(err, fabric.ErrPrivateData) {
					t.Errorf("Establish with too much data: %v, want ErrPrivateData", err)
				}
				c, err := s.Establish(ctx, acceptData)
				if err != nil {
					t.Error(err)
					return
				}
				t.Cleanup(func() { c.Close() })
			} else {
				s.Close()
			}
		}
	}()
	s, err := fabric.Dial(ctx, ln.Addr(), fabric.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.PeerData() != nil {
		t.Fatal("dialer's Setup has PeerData")
	}
	if _, err := s.Establish(ctx, make([]byte, fabric.MaxDialData+1)); !errors.Is(err, fabric.ErrPrivateData) {
		t.Fatalf("Establish with too much data: %v, want ErrPrivateData", err)
	}
	c, err := s.Establish(ctx, dialData)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !bytes.Equal(c.PeerData(), acceptData) || !bytes.Equal(<-got, dialData) {
		t.Fatal("private data did not cross")
	}
	s, err = fabric.Dial(ctx, ln.Addr(), fabric.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Establish(ctx, []byte("x")); !errors.Is(err, fabric.ErrRejected) {
		t.Fatalf("rejected Establish: %v, want ErrRejected", err)
	}
	<-got
}

func TestAddrHasRealPort(t *testing.T) {
	ln := listen(t, fabric.Options{})
	if strings.HasSuffix(ln.Addr(), ":0") || !strings.HasPrefix(ln.Addr(), "tcp://127.0.0.1:") {
		t.Fatalf("Addr() = %q", ln.Addr())
	}
	for _, bad := range []string{"tcp://127.0.0.1", "tcp:///x", "tcp://127.0.0.1:1/path"} {
		if _, err := fabric.Listen(bad, fabric.Options{}); err == nil {
			t.Errorf("Listen(%q) succeeded", bad)
		}
	}
}

func TestRemoteAccess(t *testing.T) {
	d, a := pair(t, 4096, fabric.Options{})
	// A region of another connection: its key means nothing here.
	other, _ := pair(t, 4096, fabric.Options{})
	local, err := d.c.Alloc(8192)
	if err != nil {
		t.Fatal(err)
	}
	good := a.mine.Desc()
	cases := map[string]fabric.Op{
		"unknown key":     {Remote: fabric.Desc{Addr: good.Addr, Len: 64, Key: good.Key ^ 1}, Len: 8},
		"foreign key":     {Remote: other.peer, Len: 8},
		"past the end":    {Remote: good, RemoteOff: 4090, Len: 8},
		"before the base": {Remote: good.Sub(^uint64(0), 8), Len: 8},
		"wrapping":        {Remote: good, RemoteOff: ^uint64(0) - 3, Len: 8},
		"bigger":          {Remote: good, Len: 4097},
	}
	for name, op := range cases {
		for _, kind := range []fabric.OpKind{fabric.OpRead, fabric.OpWrite} {
			op.Kind, op.Local, op.ID = kind, local, 9
			if err := d.c.Post([]fabric.Op{op}); err != nil {
				t.Fatalf("%s %v: Post: %v", name, kind, err)
			}
			if c := wait(t, d.c, 1)[0]; !errors.Is(c.Err, fabric.ErrRemoteAccess) {
				t.Fatalf("%s %v: completion %v, want ErrRemoteAccess", name, kind, c.Err)
			}
		}
	}
	// The connection still works, and the bad WRITEs' payloads were
	// skipped, not applied.
	if !bytes.Equal(a.mine.Bytes(), make([]byte, 4096)) {
		t.Fatal("a rejected WRITE modified the target")
	}
	if err := fabric.Write(d.c, d.mine, 0, good, 4088, 8); err != nil {
		t.Fatal(err)
	}
	// A region the target closed is gone for the peer at once.
	r2, err := a.c.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	if err := fabric.Read(d.c, d.mine, 0, r2.Desc(), 0, 64); err != nil {
		t.Fatal(err)
	}
	r2.Close()
	if err := fabric.Read(d.c, d.mine, 0, r2.Desc(), 0, 64); !errors.Is(err, fabric.ErrRemoteAccess) {
		t.Fatalf("READ of a closed region: %v, want ErrRemoteAccess", err)
	}
}

func TestLocalAccessPostsNothing(t *testing.T) {
	d, a := pair(t, 4096, fabric.Options{})
	other, _ := pair(t, 4096, fabric.Options{})
	closed, err := d.c.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	good := fabric.Op{Kind: fabric.OpWrite, ID: 1, Local: d.mine, Len: 8, Remote: a.mine.Desc()}
	bad := map[string]fabric.Op{
		"other conn's region": {Kind: fabric.OpRead, Local: other.mine, Len: 8, Remote: a.mine.Desc()},
		"nil region":          {Kind: fabric.OpRead, Len: 8, Remote: a.mine.Desc()},
		"closed region":       {Kind: fabric.OpRead, Local: closed, Len: 8, Remote: a.mine.Desc()},
		"past the end":        {Kind: fabric.OpRead, Local: d.mine, LocalOff: 4090, Len: 8, Remote: a.mine.Desc()},
		"negative offset":     {Kind: fabric.OpRead, Local: d.mine, LocalOff: -1, Len: 8, Remote: a.mine.Desc()},
		"negative length":     {Kind: fabric.OpRead, Local: d.mine, Len: -1, Remote: a.mine.Desc()},
		"bad kind":            {Kind: 0, Local: d.mine, Len: 8, Remote: a.mine.Desc()},
	}
	for name, op := range bad {
		if err := d.c.Post([]fabric.Op{good, op}); !errors.Is(err, fabric.ErrLocalAccess) {
			t.Fatalf("%s: Post = %v, want ErrLocalAccess", name, err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	if n, err := d.c.Poll(make([]fabric.Completion, 4)); n != 0 || err != nil {
		t.Fatalf("after failed Posts, Poll = %d, %v; want nothing posted", n, err)
	}
	if err := fabric.Write(d.c, d.mine, 0, a.mine.Desc(), 0, 8); err != nil {
		t.Fatal(err)
	}
}

func TestQueueFull(t *testing.T) {
	d, a := pair(t, 4096, fabric.Options{QueueDepth: 4})
	op := fabric.Op{Kind: fabric.OpRead, Local: d.mine, Len: 8, Remote: a.mine.Desc()}
	if err := d.c.Post([]fabric.Op{op, op, op, op, op}); !errors.Is(err, fabric.ErrQueueFull) {
		t.Fatalf("5 ops on depth 4: %v", err)
	}
	if err := d.c.Post([]fabric.Op{op, op, op}); err != nil {
		t.Fatal(err)
	}
	if err := d.c.Post([]fabric.Op{op, op}); !errors.Is(err, fabric.ErrQueueFull) {
		t.Fatalf("3+2 ops on depth 4: %v", err)
	}
	if err := d.c.Post([]fabric.Op{op}); err != nil {
		t.Fatal(err)
	}
	wait(t, d.c, 4)
	if err := d.c.Post([]fabric.Op{op, op, op, op}); err != nil {
		t.Fatal(err)
	}
	wait(t, d.c, 4)
}

func TestPeerGone(t *testing.T) {
	d, a := pair(t, 1<<20, fabric.Options{})
	// Keep ops in flight while the peer goes away.
	op := fabric.Op{Kind: fabric.OpRead, Local: d.mine, Len: 1 << 20, Remote: a.mine.Desc()}
	if err := d.c.Post([]fabric.Op{op, op, op, op, op, op, op, op}); err != nil {
		t.Fatal(err)
	}
	a.c.Close()
	select {
	case <-d.c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed 5s after the peer closed")
	}
	if !errors.Is(d.c.Err(), fabric.ErrPeerGone) {
		t.Fatalf("Err = %v, want ErrPeerGone", d.c.Err())
	}
	if !errors.Is(a.c.Err(), fabric.ErrClosed) {
		t.Fatalf("closer's Err = %v, want ErrClosed", a.c.Err())
	}
	cs := make([]fabric.Completion, 16)
	got := 0
	for {
		n, err := d.c.Poll(cs)
		for _, c := range cs[:n] {
			if c.Err != nil && !errors.Is(c.Err, fabric.ErrPeerGone) {
				t.Fatalf("completion err %v", c.Err)
			}
		}
		got += n
		if err != nil {
			if !errors.Is(err, fabric.ErrPeerGone) {
				t.Fatalf("Poll err %v", err)
			}
			break
		}
	}
	if got != 8 {
		t.Fatalf("%d of 8 completions", got)
	}
	if err := d.c.Post([]fabric.Op{op}); !errors.Is(err, fabric.ErrPeerGone) {
		t.Fatalf("Post after peer gone: %v", err)
	}
	if _, err := d.c.Alloc(64); err != nil {
		t.Fatal("Alloc on a dead, unclosed conn:", err)
	}
	d.c.Close()
	d.c.Close()
	if err := d.c.Post([]fabric.Op{op}); !errors.Is(err, fabric.ErrClosed) {
		t.Fatalf("Post after Close: %v", err)
	}
}

func TestCloseWithOpsOutstanding(t *testing.T) {
	d, a := pair(t, 1<<20, fabric.Options{})
	op := fabric.Op{Kind: fabric.OpWrite, Local: d.mine, Len: 1 << 20, Remote: a.mine.Desc()}
	for range 3 {
		if err := d.c.Post([]fabric.Op{op, op, op, op}); err != nil {
			t.Fatal(err)
		}
	}
	d.c.Close()
	if err := d.c.Post([]fabric.Op{op}); !errors.Is(err, fabric.ErrClosed) {
		t.Fatalf("Post after Close: %v", err)
	}
	cs := make([]fabric.Completion, 16)
	total := 0
	for {
		n, err := d.c.Poll(cs)
		total += n
		if err != nil {
			break
		}
	}
	if total != 12 {
		t.Fatalf("%d of 12 completions after Close", total)
	}
	select {
	case <-a.c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("peer did not notice the Close")
	}
}

// A dialer whose host vanishes is found by keepalive; check the socket
// carries the options (a vanishing host is not reproducible on loopback).
func TestSocketOptions(t *testing.T) {
	d, a := pair(t, 64, fabric.Options{})
	for _, c := range []fabric.Conn{d.c, a.c} {
		func(fd int) {
			get := func(level, opt int) int {
				v, err := unix.GetsockoptInt(fd, level, opt)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			if get(unix.SOL_SOCKET, unix.SO_KEEPALIVE) == 0 {
				t.Error("SO_KEEPALIVE off")
			}
			if v := get(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE); v != int(KeepAliveIdle.Seconds()) {
				t.Errorf("TCP_KEEPIDLE = %d", v)
			}
			if v := get(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL); v != int(KeepAliveInterval.Seconds()) {
				t.Errorf("TCP_KEEPINTVL = %d", v)
			}
			if v := get(unix.IPPROTO_TCP, unix.TCP_KEEPCNT); v != KeepAliveCount {
				t.Errorf("TCP_KEEPCNT = %d", v)
			}
			if v := get(unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT); v != int(UserTimeout.Milliseconds()) {
				t.Errorf("TCP_USER_TIMEOUT = %d", v)
			}
			if get(unix.IPPROTO_TCP, unix.TCP_NODELAY) == 0 {
				t.Error("TCP_NODELAY off")
			}
		}(c.(*conn).fd)
	}
}

// rawDial connects to ln without the provider, for speaking bad protocol.
func rawDial(t *testing.T, ln fabric.Listener) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", strings.TrimPrefix(ln.Addr(), "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return nc
}

func TestGarbageHello(t *testing.T) {
	ln := listen(t, fabric.Options{})
	// A stray HTTP client learns what it reached, and is closed.
	nc := rawDial(t, ln)
	io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	reply, _ := io.ReadAll(nc)
	if !bytes.Contains(reply, []byte("expected a jakiro fabric/tcp hello")) {
		t.Fatalf("stray client got %q", reply)
	}
	// Another protocol version gets told so.
	nc = rawDial(t, ln)
	hello := putHS(nil, kindHello, 8, nil)
	binary.LittleEndian.PutUint16(hello[8:], 99)
	nc.Write(hello)
	reply, _ = io.ReadAll(nc)
	h, err := parseHS(reply)
	if err != nil || h.kind != kindBadVersion || h.version != version {
		t.Fatalf("version 99 hello got %q (%v)", reply, err)
	}
	// Declared data longer than the handshake carries is refused without
	// reading it.
	nc = rawDial(t, ln)
	hello = putHS(nil, kindHello, 8, nil)
	hello[11] = 255
	nc.Write(hello)
	reply, _ = io.ReadAll(nc)
	if !bytes.Contains(reply, []byte("exceeds")) {
		t.Fatalf("oversized hello data got %q", reply)
	}
	// A half hello times out on its own; meanwhile the listener serves others.
	half := rawDial(t, ln)
	half.Write([]byte(magic))
	d, _ := pairOn(t, ln)
	d.Close()
	// None of the bad ones reached Accept.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if s, err := ln.Accept(ctx); err == nil {
		t.Fatalf("a bad hello reached Accept: %v", s.PeerData())
	}
	// Close does not wait out the silent client's hello timeout.
	start := time.Now()
	ln.Close()
	if took := time.Since(start); took > time.Second {
		t.Fatalf("listener Close took %v with a client mid-hello", took)
	}
	if _, err := ln.Accept(ctx); !errors.Is(err, fabric.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
}

// pairOn establishes one connection through ln with empty private data.
func pairOn(t *testing.T, ln fabric.Listener) (fabric.Conn, fabric.Conn) {
	t.Helper()
	ctx := ctxT(t)
	ch := make(chan fabric.Conn, 1)
	go func() {
		s, err := ln.Accept(ctx)
		if err != nil {
			t.Error(err)
			ch <- nil
			return
		}
		c, err := s.Establish(ctx, nil)
		if err != nil {
			t.Error(err)
		}
		ch <- c
	}()
	s, err := fabric.Dial(ctx, ln.Addr(), fabric.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Establish(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := <-ch
	if a == nil {
		t.FailNow()
	}
	t.Cleanup(func() { c.Close(); a.Close() })
	return c, a
}

// fakeServer answers every connection with reply, then closes.
func fakeServer(t *testing.T, reply []byte) string {
	return fakeServerFunc(t, func(nc net.Conn) {
		nc.Write(reply)
		nc.Close()
	})
}

// fakeServerFunc hands every connection to serve, in its own goroutine.
func fakeServerFunc(t *testing.T, serve func(net.Conn)) string {
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nl.Close() })
	go func() {
		for {
			nc, err := nl.Accept()
			if err != nil {
				return
			}
			go serve(nc)
		}
	}()
	return "tcp://" + nl.Addr().String()
}

func TestStrayServer(t *testing.T) {
	ctx := ctxT(t)
	bad := putHS(nil, kindBadVersion, 0, nil)
	binary.LittleEndian.PutUint16(bad[8:], 7)
	for reply, want := range map[string]string{
		"SSH-2.0-OpenSSH_9.6\r\n": "not a jakiro fabric/tcp peer",
		string(bad):               "speaks protocol version 7",
		string(putHS(nil, kindAccept, 8, make([]byte, 200))): "exceeds",
	} {
		s, err := fabric.Dial(ctx, fakeServer(t, []byte(reply)), fabric.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Establish(ctx, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("server answering %q: Establish = %v, want %q", reply, err, want)
		}
	}
}

// A listener that sheds a pending handshake closes the socket with the
// hello unread, which the dialer sees as a reset: that is a rejection
// (worth retrying, as the client does), not a vanished peer.
func TestShedHandshakeIsRejection(t *testing.T) {
	addr := fakeServerFunc(t, func(nc net.Conn) {
		var b [1]byte
		nc.Read(b[:]) // the hello is there; leave the rest unread
		nc.(*net.TCPConn).SetLinger(0)
		nc.Close()
	})
	ctx := ctxT(t)
	s, err := fabric.Dial(ctx, addr, fabric.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Establish(ctx, nil); !errors.Is(err, fabric.ErrRejected) {
		t.Fatalf("handshake shed with a reset: Establish = %v, want ErrRejected", err)
	}
}

// rawConn is a hand-driven peer that completed the handshake with ln.
func rawConn(t *testing.T, ln fabric.Listener, grant int) (net.Conn, fabric.Conn, *fabric.Region) {
	t.Helper()
	ctx := ctxT(t)
	nc := rawDial(t, ln)
	nc.Write(putHS(nil, kindHello, 16, nil))
	s, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Alloc(grant)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Establish(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var hb [hsSize]byte
	if _, err := io.ReadFull(nc, hb[:]); err != nil {
		t.Fatal(err)
	}
	if h, err := parseHS(hb[:]); err != nil || h.kind != kindAccept || h.dataLen != 0 {
		t.Fatalf("accept reply %q: %v", hb, err)
	}
	return nc, c, r
}

func req(typ uint8, key uint32, addr uint64, n uint32) []byte {
	var t txState
	t.putReq(typ, key, addr, int(n), nil)
	return t.buf
}

func TestMalformedFrames(t *testing.T) {
	ln := listen(t, fabric.Options{})
	expectProtoErr := func(c fabric.Conn, want string) {
		t.Helper()
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("connection survived a malformed frame")
		}
		if err := c.Err(); !errors.Is(err, fabric.ErrPeerGone) || !errors.Is(err, errProto) || !strings.Contains(err.Error(), want) {
			t.Fatalf("Err = %v, want a protocol error about %q", err, want)
		}
	}
	t.Run("unknown frame", func(t *testing.T) {
		nc, c, _ := rawConn(t, ln, 64)
		nc.Write([]byte{0x47, 0x45, 0x54})
		expectProtoErr(c, "unknown frame type 0x47")
	})
	t.Run("huge length", func(t *testing.T) {
		nc, c, r := rawConn(t, ln, 64)
		nc.Write(req(frameWrite, r.Desc().Key, r.Desc().Addr, 0xffffffff))
		expectProtoErr(c, "exceeds")
	})
	t.Run("unsolicited response", func(t *testing.T) {
		nc, c, _ := rawConn(t, ln, 64)
		nc.Write([]byte{frameResp, statusOK})
		expectProtoErr(c, "no request outstanding")
	})
	t.Run("bad status", func(t *testing.T) {
		nc, c, r := rawConn(t, ln, 64)
		go fabric.Read(c, r, 0, fabric.Desc{Addr: 1, Key: 1}, 0, 8)
		var b [reqSize]byte
		io.ReadFull(nc, b[:])
		nc.Write([]byte{frameResp, 77})
		expectProtoErr(c, "status 77")
	})
	t.Run("peer that does not read", func(t *testing.T) {
		// READs of 1 MiB the peer never reads back fill both socket
		// buffers and block the sender; Close must not wait on it.
		nc, c, _ := rawConn(t, ln, 1<<20)
		d := c.(*conn).d
		var key uint32
		var base uint64
		for k, r := range *d.keys.Load() {
			key, base = k, r.base
		}
		for range 16 {
			nc.Write(req(frameRead, key, base, 1<<20))
		}
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		c.Close()
		if took := time.Since(start); took > 3*time.Second {
			t.Fatalf("Close took %v with a peer that does not read", took)
		}
	})
	t.Run("served by the NIC alone", func(t *testing.T) {
		nc, c, r := rawConn(t, ln, 64)
		d := r.Desc()
		// A rejected WRITE's payload is skipped, the next request still
		// parses; a good WRITE then READ round-trips; nobody polls c.
		var in []byte
		in = append(in, req(frameWrite, d.Key+1, d.Addr, 5)...)
		in = append(in, "xxxxx"...)
		in = append(in, req(frameWrite, d.Key, d.Addr+8, 5)...)
		in = append(in, "hello"...)
		in = append(in, req(frameRead, d.Key, d.Addr+8, 5)...)
		in = append(in, req(frameRead, d.Key, d.Addr+60, 5)...)
		nc.Write(in)
		want := []byte{frameResp, statusAccess, frameResp, statusOK, frameResp, statusOK, 'h', 'e', 'l', 'l', 'o', frameResp, statusAccess}
		got := make([]byte, len(want))
		if _, err := io.ReadFull(nc, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("responses %q, want %q", got, want)
		}
		if string(r.Bytes()[8:13]) != "hello" || c.Err() != nil {
			t.Fatal("WRITE not applied or connection broken")
		}
		// Truncated mid-payload: the peer is gone, nothing panics.
		nc.Write(req(frameWrite, d.Key, d.Addr, 32))
		nc.Write([]byte("short"))
		nc.Close()
		<-c.Done()
		if !errors.Is(c.Err(), fabric.ErrPeerGone) {
			t.Fatalf("Err = %v", c.Err())
		}
	})
}

// Both sides READ big blocks from each other at once; the NICs must not
// deadlock on full socket buffers. (A deadlock fails wait's deadline; a
// loaded machine may starve a side for a while, so no SendTimeout cut.)
func TestBidirectionalBulk(t *testing.T) {
	const size = 1 << 20
	d, a := pair(t, 8*size, fabric.Options{QueueDepth: 32, SendTimeout: time.Minute})
	var wg sync.WaitGroup
	for _, s := range []side{d, a} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ops := make([]fabric.Op, 8)
			for i := range ops {
				ops[i] = fabric.Op{Kind: fabric.OpRead, ID: uint64(i), Local: s.mine, LocalOff: i * size, Len: size, Remote: s.peer, RemoteOff: uint64(i * size)}
			}
			for range 8 {
				if err := s.c.Post(ops); err != nil {
					t.Error(err)
					return
				}
				for _, c := range wait(t, s.c, len(ops)) {
					if c.Err != nil {
						t.Error(c.Err)
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestNoAllocs(t *testing.T) {
	d, a := pair(t, 4096, fabric.Options{})
	ops := []fabric.Op{
		{Kind: fabric.OpWrite, Local: d.mine, Len: 32, Remote: a.mine.Desc()},
		{Kind: fabric.OpRead, Local: d.mine, Len: 32, Remote: a.mine.Desc(), RemoteOff: 64},
	}
	var cs [4]fabric.Completion
	allocs := testing.AllocsPerRun(200, func() {
		if err := d.c.Post(ops); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < len(ops); {
			n, err := d.c.Poll(cs[:])
			if err != nil {
				t.Fatal(err)
			}
			got += n
			if n == 0 {
				// AllocsPerRun runs on one P, where a spinning goroutine
				// keeps the netpoller (and so the reader) waiting for
				// sysmon: park instead.
				time.Sleep(time.Microsecond)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocs per Post+Poll of 2 ops", allocs)
	}
}

func TestDomainLimit(t *testing.T) {
	d, _ := pair(t, 4096, fabric.Options{DomainSize: 1 << 16})
	if _, err := d.c.Alloc(1 << 16); !errors.Is(err, fabric.ErrNoMemory) {
		t.Fatalf("Alloc past DomainSize: %v", err)
	}
	r, err := d.c.Alloc(1<<16 - 4096)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := d.c.Alloc(1<<16 - 4096); err != nil {
		t.Fatal("closing a region did not give its bytes back:", err)
	}
	if _, err := d.c.Alloc(0); err == nil {
		t.Fatal("Alloc(0) succeeded")
	}
}

// FuzzFrames feeds arbitrary bytes to an established connection's NIC:
// whatever they are, it must not panic, must not touch memory outside the
// granted region, and must end or keep serving.
func FuzzFrames(f *testing.F) {
	f.Add([]byte{0xff})
	f.Add(req(frameRead, 0, 0, 8))
	f.Add(append(req(frameWrite, 1, 1<<40, 3), 1, 2, 3))
	f.Add([]byte{frameResp, statusOK, frameResp})
	f.Add(req(frameWrite, 0, 0, MaxOpLen))
	f.Add(bytes.Repeat([]byte{frameRead}, 100))
	ln := listen(f, fabric.Options{})
	f.Fuzz(func(t *testing.T, in []byte) {
		nc, c, r := rawConn(t, ln, 64)
		// Half the inputs aim at the real region, to get past the key.
		if len(in) >= reqSize && in[0]&1 == 1 {
			binary.LittleEndian.PutUint32(in[4:], r.Desc().Key)
		}
		nc.Write(in)
		nc.Close()
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("connection did not end after the peer closed")
		}
		if !errors.Is(c.Err(), fabric.ErrPeerGone) {
			t.Fatalf("Err = %v", c.Err())
		}
	})
}

func TestOptionBounds(t *testing.T) {
	if _, err := fabric.Listen("tcp://127.0.0.1:0", fabric.Options{QueueDepth: maxQueueDepth + 1}); err == nil {
		t.Fatal("Listen with QueueDepth beyond the wire's bound succeeded")
	}
	ln := listen(t, fabric.Options{})
	if _, err := fabric.Dial(ctxT(t), ln.Addr(), fabric.Options{QueueDepth: maxQueueDepth + 1}); err == nil {
		t.Fatal("Dial with QueueDepth beyond the wire's bound succeeded")
	}
}

// Close from another goroutine while Post and Poll run flat out: no
// fault on unmapped memory, no hang, and the poller ends with ErrClosed.
func TestCloseWhileBusy(t *testing.T) {
	for round := range 5 {
		d, a := pair(t, 1<<16, fabric.Options{QueueDepth: 16})
		ops := []fabric.Op{
			{Kind: fabric.OpWrite, Local: d.mine, Len: 1 << 15, Remote: d.peer},
			{Kind: fabric.OpRead, Local: d.mine, LocalOff: 1 << 15, Len: 1 << 15, Remote: d.peer},
		}
		done := make(chan error, 1)
		go func() {
			var cs [16]fabric.Completion
			for {
				if err := d.c.Post(ops); err != nil && !errors.Is(err, fabric.ErrQueueFull) {
					done <- err
					return
				}
				if _, err := d.c.Poll(cs[:]); err != nil {
					done <- err
					return
				}
			}
		}()
		time.Sleep(time.Duration(round) * time.Millisecond)
		if round%2 == 0 {
			d.c.Close()
		} else {
			a.c.Close() // the target goes instead
		}
		select {
		case err := <-done:
			if !errors.Is(err, fabric.ErrClosed) && !errors.Is(err, fabric.ErrPeerGone) {
				t.Fatalf("round %d: poller ended with %v", round, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: poller still running 5s after Close", round)
		}
	}
}
