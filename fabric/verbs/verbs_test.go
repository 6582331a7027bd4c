//go:build rdma

package verbs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabrictest"
)

// Main: the conformance suite's cross-process case re-executes this binary.
func TestMain(m *testing.M) { fabrictest.Main(m) }

func TestConformance(t *testing.T) {
	requireRDMA(t)
	fabrictest.Run(t, newAddr)
}

// The tests need an RDMA device: scripts/rxe-vm/test-rdma.sh runs them in
// a VM with soft-RoCE rxe0 on 192.168.77.1 and sets JAKIRO_RDMA_REQUIRED=1,
// which turns a missing device into a failure instead of a skip.
func rdmaDev() string { return envOr("JAKIRO_RDMA_DEV", "rxe0") }
func rdmaIP() string  { return envOr("JAKIRO_RDMA_IP", "192.168.77.1") }

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

func requireRDMA(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/sys/class/infiniband/" + rdmaDev()); err != nil {
		if os.Getenv("JAKIRO_RDMA_REQUIRED") == "1" {
			t.Fatalf("JAKIRO_RDMA_REQUIRED=1 but RDMA device %s is missing: %v", rdmaDev(), err)
		}
		t.Skipf("no RDMA device %s (%v); run scripts/rxe-vm/test-rdma.sh to test in a soft-RoCE VM", rdmaDev(), err)
	}
}

// rdma_cm ports are their own space; processes of one run use disjoint
// ranges.
var nextPort atomic.Int32

func init() { nextPort.Store(int32(20000 + os.Getpid()%2000*16)) }

func newAddr(t *testing.T) string { return addrFor(t) }

func addrFor(t testing.TB) string {
	requireRDMA(t)
	return fmt.Sprintf("rdma://%s:%d?dev=%s", rdmaIP(), nextPort.Add(1), rdmaDev())
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// link is one connection: the dialer D has region DR, the acceptor A
// granted AR (ToA is its Desc as the dialer got it in the handshake).
type link struct {
	D, A   fabric.Conn
	DR, AR *fabric.Region
	ToA    fabric.Desc
}

func dialLink(t testing.TB, ln fabric.Listener, o fabric.Options, size int) *link {
	t.Helper()
	p, err := fabrictest.Connect(ctxT(t), ln, o, size, size, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := &link{D: p.D, A: p.A, DR: p.DReg, AR: p.AReg, ToA: p.ToA}
	t.Cleanup(func() { l.D.Close(); l.A.Close() })
	return l
}

func listenT(t testing.TB, o fabric.Options) fabric.Listener {
	t.Helper()
	ln, err := fabric.Listen(addrFor(t), o)
	if err != nil {
		t.Fatal("Listen:", err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// reap polls until n completions arrived (30 s at most).
func reap(t testing.TB, c fabric.Conn, n int, batch int) []fabric.Completion {
	t.Helper()
	var out []fabric.Completion
	cs := make([]fabric.Completion, batch)
	deadline := time.Now().Add(30 * time.Second)
	for len(out) < n {
		k, err := c.Poll(cs)
		if err != nil {
			t.Fatalf("Poll after %d of %d: %v", len(out), n, err)
		}
		out = append(out, cs[:k]...)
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d completions after 30s", len(out), n)
		}
	}
	return out
}

func TestReadWrite(t *testing.T) {
	ln := listenT(t, fabric.Options{})
	l := dialLink(t, ln, fabric.Options{}, 1<<20)
	for _, n := range []int{1, 32, 4096, 1 << 20} {
		src := l.DR.Bytes()[:n]
		for i := range src {
			src[i] = byte(i*7 + n)
		}
		if err := fabric.Write(l.D, l.DR, 0, l.ToA, 0, n); err != nil {
			t.Fatalf("WRITE %d: %v", n, err)
		}
		clear(l.DR.Bytes())
		if err := fabric.Read(l.D, l.DR, 0, l.ToA, 0, n); err != nil {
			t.Fatalf("READ %d: %v", n, err)
		}
		if !bytes.Equal(l.DR.Bytes()[:n], l.AR.Bytes()[:n]) {
			t.Fatalf("%d bytes: READ back differs from the target", n)
		}
	}
	// The acceptor's side works too (the dialer granted nothing, so it
	// reads its own region back through a Desc it got out of band).
	if err := fabric.Read(l.A, l.AR, 0, l.DR.Desc(), 0, 64); err != nil {
		t.Fatalf("acceptor READ: %v", err)
	}
}

// TestPDIsolation: a client that names another client's region (right
// address, right rkey, wrong connection) gets a remote access error, and
// the region is untouched: every connection has its own protection domain.
func TestPDIsolation(t *testing.T) {
	ln := listenT(t, fabric.Options{})
	victim := dialLink(t, ln, fabric.Options{}, 4096)
	thief := dialLink(t, ln, fabric.Options{}, 4096)
	if victim.ToA.Key == thief.ToA.Key {
		t.Fatalf("two connections got the same rkey %#x", victim.ToA.Key)
	}
	copy(victim.AR.Bytes(), "secret")
	if err := fabric.Read(thief.D, thief.DR, 0, thief.ToA, 0, 64); err != nil {
		t.Fatalf("thief reading its own grant: %v", err)
	}
	copy(thief.DR.Bytes(), "overwrite!")
	err := fabric.Write(thief.D, thief.DR, 0, victim.ToA, 0, 10)
	if !errors.Is(err, fabric.ErrRemoteAccess) {
		t.Fatalf("WRITE with a guessed rkey: %v, want ErrRemoteAccess", err)
	}
	t.Logf("guessed rkey %#x: %v", victim.ToA.Key, err)
	if string(victim.AR.Bytes()[:6]) != "secret" {
		t.Fatalf("victim region changed: %q", victim.AR.Bytes()[:10])
	}
	// The victim's own connection is unaffected.
	if err := fabric.Read(victim.D, victim.DR, 0, victim.ToA, 0, 6); err != nil || string(victim.DR.Bytes()[:6]) != "secret" {
		t.Fatalf("victim READ: %v %q", err, victim.DR.Bytes()[:6])
	}
	// A READ through a fresh thief connection fails the same way.
	thief2 := dialLink(t, ln, fabric.Options{}, 4096)
	if err := fabric.Read(thief2.D, thief2.DR, 0, victim.ToA, 0, 6); !errors.Is(err, fabric.ErrRemoteAccess) {
		t.Fatalf("READ with a guessed rkey: %v, want ErrRemoteAccess", err)
	}
	if bytes.Contains(thief2.DR.Bytes(), []byte("secret")) {
		t.Fatal("thief got the data")
	}
}

// TestSelectiveSignaling posts batches far larger than the signaling
// interval and longer runs than the queue, and checks one completion per
// op in posting order, whatever the Poll batch size.
func TestSelectiveSignaling(t *testing.T) {
	const depth = 16 // a signaled WR every 4
	o := fabric.Options{QueueDepth: depth}
	ln := listenT(t, o)
	l := dialLink(t, ln, o, 64*depth)
	c := l.D.(*conn)
	if c.sq.signalEvery != depth/4 {
		t.Fatalf("signalEvery = %d", c.sq.signalEvery)
	}
	id := uint64(0)
	for round, pollBatch := range []int{1, 3, 16, 7, 2} {
		var ops []fabric.Op
		for i := 0; i < depth; i++ {
			id++
			k := fabric.OpWrite
			if i%3 == 2 {
				k = fabric.OpRead
			}
			copy(l.DR.Bytes()[i*64:], fmt.Sprintf("r%d-op%d", round, i))
			ops = append(ops, fabric.Op{Kind: k, ID: id * 1000, Local: l.DR, LocalOff: i * 64, Len: 64, Remote: l.ToA, RemoteOff: uint64(i * 64)})
		}
		// Batches of 5, 5, 6: every batch ends signaled, the first WRs of
		// each are not.
		for _, b := range [][2]int{{0, 5}, {5, 10}, {10, 16}} {
			if err := l.D.Post(ops[b[0]:b[1]]); err != nil {
				t.Fatalf("round %d Post: %v", round, err)
			}
		}
		if err := l.D.Post(ops[:1]); !errors.Is(err, fabric.ErrQueueFull) {
			t.Fatalf("Post beyond QueueDepth: %v, want ErrQueueFull", err)
		}
		cs := reap(t, l.D, depth, pollBatch)
		for i, cp := range cs {
			if cp.ID != ops[i].ID || cp.Kind != ops[i].Kind || cp.Err != nil {
				t.Fatalf("round %d completion %d = %+v, want ID %d kind %v ok", round, i, cp, ops[i].ID, ops[i].Kind)
			}
		}
	}
	var none [4]fabric.Completion
	if n, err := l.D.Poll(none[:]); n != 0 || err != nil {
		t.Fatalf("Poll with nothing outstanding: %d, %v", n, err)
	}
}

// TestInlineWrite: a small WRITE is posted inline, so its payload is copied
// at Post: scribbling over the local buffer before the completion cannot
// change what lands at the target.
func TestInlineWrite(t *testing.T) {
	ln := listenT(t, fabric.Options{})
	l := dialLink(t, ln, fabric.Options{}, 4096)
	c := l.D.(*conn)
	t.Logf("max_inline_data = %d", c.maxInline)
	if c.maxInline < 32 {
		t.Fatalf("max_inline_data = %d, want >= 32", c.maxInline)
	}
	for i := 0; i < 50; i++ {
		want := fmt.Sprintf("inline payload %04d..............", i)[:32]
		copy(l.DR.Bytes(), want)
		if err := l.D.Post([]fabric.Op{{Kind: fabric.OpWrite, ID: uint64(i), Local: l.DR, Len: 32, Remote: l.ToA}}); err != nil {
			t.Fatal(err)
		}
		copy(l.DR.Bytes(), "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX")
		if cs := reap(t, l.D, 1, 1); cs[0].Err != nil {
			t.Fatal(cs[0].Err)
		}
		if got := string(l.AR.Bytes()[:32]); got != want {
			t.Fatalf("target holds %q, want %q", got, want)
		}
	}
}

func TestPrivateDataExact(t *testing.T) {
	ln := listenT(t, fabric.Options{})
	ctx := ctxT(t)
	pat := func(n int, zeroTail bool) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i + 1)
		}
		if zeroTail && n > 0 {
			b[n-1] = 0 // must survive: rdma_cm pads with zeros
		}
		return b
	}
	for _, c := range []struct{ d, a int }{{0, 0}, {1, 1}, {55, 191}, {56, 192}, {20, 100}} {
		for _, zt := range []bool{false, true} {
			dd, ad := pat(c.d, zt), pat(c.a, zt)
			ch := make(chan error, 1)
			var acc fabric.Conn
			go func() {
				s, err := ln.Accept(ctx)
				if err == nil && !bytes.Equal(s.PeerData(), dd) {
					err = fmt.Errorf("acceptor got %x, want %x", s.PeerData(), dd)
				}
				if err == nil {
					acc, err = s.Establish(ctx, ad)
				}
				ch <- err
			}()
			s, err := fabric.Dial(ctx, ln.Addr(), fabric.Options{})
			if err != nil {
				t.Fatal(err)
			}
			d, err := s.Establish(ctx, dd)
			if err != nil {
				t.Fatalf("%d/%d: %v", c.d, c.a, err)
			}
			if err := <-ch; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(d.PeerData(), ad) {
				t.Fatalf("dialer got %x, want %x", d.PeerData(), ad)
			}
			d.Close()
			acc.Close()
		}
	}
}

func TestLocalAccess(t *testing.T) {
	ln := listenT(t, fabric.Options{})
	a := dialLink(t, ln, fabric.Options{}, 4096)
	b := dialLink(t, ln, fabric.Options{}, 4096)
	for name, op := range map[string]fabric.Op{
		"other conn's region": {Kind: fabric.OpRead, Local: b.DR, Len: 8, Remote: a.ToA},
		"past the end":        {Kind: fabric.OpRead, Local: a.DR, LocalOff: 4090, Len: 8, Remote: a.ToA},
		"negative offset":     {Kind: fabric.OpRead, Local: a.DR, LocalOff: -1, Len: 8, Remote: a.ToA},
		"nil region":          {Kind: fabric.OpWrite, Len: 8, Remote: a.ToA},
	} {
		ok := fabric.Op{Kind: fabric.OpRead, ID: 1, Local: a.DR, Len: 8, Remote: a.ToA}
		if err := a.D.Post([]fabric.Op{ok, op}); !errors.Is(err, fabric.ErrLocalAccess) {
			t.Fatalf("%s: %v, want ErrLocalAccess", name, err)
		}
	}
	var none [2]fabric.Completion
	if n, _ := a.D.Poll(none[:]); n != 0 {
		t.Fatal("a rejected batch posted something")
	}
	r, err := a.D.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if err := fabric.Read(a.D, r, 0, a.ToA, 0, 8); !errors.Is(err, fabric.ErrLocalAccess) {
		t.Fatalf("closed region: %v, want ErrLocalAccess", err)
	}
	if err := fabric.Read(a.D, a.DR, 0, a.ToA, 0, 8); err != nil {
		t.Fatalf("after rejected posts: %v", err)
	}
}

// TestPeerClose: closing one end ends the other: Done closes, Err is
// ErrPeerGone, and new ops fail with it.
func TestPeerClose(t *testing.T) {
	ln := listenT(t, fabric.Options{})
	l := dialLink(t, ln, fabric.Options{}, 4096)
	start := time.Now()
	l.A.Close()
	select {
	case <-l.D.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("dialer did not notice the acceptor closing within 5s")
	}
	t.Logf("peer close noticed after %v", time.Since(start))
	if !errors.Is(l.D.Err(), fabric.ErrPeerGone) {
		t.Fatalf("Err = %v, want ErrPeerGone", l.D.Err())
	}
	if err := fabric.Read(l.D, l.DR, 0, l.ToA, 0, 8); !errors.Is(err, fabric.ErrPeerGone) {
		t.Fatalf("READ after peer close: %v, want ErrPeerGone", err)
	}
	if !errors.Is(l.A.Err(), fabric.ErrClosed) {
		t.Fatalf("closer's Err = %v, want ErrClosed", l.A.Err())
	}
}

const childEnv = "JAKIRO_VERBS_CHILD_ADDR"

// TestPeerKilled: a dialer process killed with SIGKILL (no Close) is
// reported to the acceptor as ErrPeerGone: its kernel tears the
// connection down.
func TestPeerKilled(t *testing.T) {
	if addr := os.Getenv(childEnv); addr != "" {
		childDial(addr)
		return
	}
	ln := listenT(t, fabric.Options{})
	cmd := exec.Command(os.Args[0], "-test.run=^TestPeerKilled$")
	cmd.Env = append(os.Environ(), childEnv+"="+ln.Addr())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	ctx := ctxT(t)
	s, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, r, err := fabrictest.Grant(ctx, s, 4096, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "wrote" {
		t.Fatalf("child said %q", sc.Text())
	}
	if string(r.Bytes()[:5]) != "child" {
		t.Fatalf("child's WRITE not visible: %q", r.Bytes()[:5])
	}
	start := time.Now()
	cmd.Process.Kill()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("acceptor did not notice the killed dialer within 5s")
	}
	t.Logf("killed peer noticed after %v: %v", time.Since(start), c.Err())
	if !errors.Is(c.Err(), fabric.ErrPeerGone) {
		t.Fatalf("Err = %v, want ErrPeerGone", c.Err())
	}
}

func childDial(addr string) {
	ctx := context.Background()
	s, err := fabric.Dial(ctx, addr, fabric.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	r, _ := s.Alloc(4096)
	c, err := s.Establish(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	d, _ := fabric.ParseDesc(c.PeerData())
	copy(r.Bytes(), "child")
	if err := fabric.Write(c, r, 0, d, 0, 5); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	fmt.Println("wrote")
	time.Sleep(time.Hour) // until killed
}

// TestPosted flushes: ops outstanding when the peer goes away complete
// (with ErrPeerGone or success), none hang.
func TestOutstandingAtPeerClose(t *testing.T) {
	ln := listenT(t, fabric.Options{})
	l := dialLink(t, ln, fabric.Options{}, 1<<20)
	var ops []fabric.Op
	for i := 0; i < 64; i++ {
		ops = append(ops, fabric.Op{Kind: fabric.OpWrite, ID: uint64(i), Local: l.DR, Len: 16 << 10, Remote: l.ToA, RemoteOff: uint64(i) * 16 << 10})
	}
	if err := l.D.Post(ops); err != nil {
		t.Fatal(err)
	}
	l.A.Close()
	cs := make([]fabric.Completion, 8)
	got := 0
	deadline := time.Now().Add(10 * time.Second)
	for got < len(ops) && time.Now().Before(deadline) {
		n, err := l.D.Poll(cs)
		for i := 0; i < n; i++ {
			if cs[i].ID != uint64(got) {
				t.Fatalf("completion %d has ID %d", got, cs[i].ID)
			}
			if cs[i].Err != nil && !errors.Is(cs[i].Err, fabric.ErrPeerGone) {
				t.Fatalf("completion %d: %v", got, cs[i].Err)
			}
			got++
		}
		if err != nil {
			break
		}
	}
	if got != len(ops) {
		t.Fatalf("%d of %d ops completed after the peer closed", got, len(ops))
	}
}

// TestErrorMidBatch: an unsignaled WR that fails in the middle of a batch
// still gets its own error, the ones before it succeed, and the ones after
// it (flushed: the QP is in error) fail; all in posting order.
func TestErrorMidBatch(t *testing.T) {
	ln := listenT(t, fabric.Options{})
	l := dialLink(t, ln, fabric.Options{}, 4096)
	bad := l.ToA
	bad.Key ^= 0x5a5a00
	ops := []fabric.Op{
		{Kind: fabric.OpWrite, ID: 10, Local: l.DR, Len: 8, Remote: l.ToA},
		{Kind: fabric.OpRead, ID: 11, Local: l.DR, LocalOff: 8, Len: 8, Remote: l.ToA},
		{Kind: fabric.OpWrite, ID: 12, Local: l.DR, Len: 8, Remote: bad},
		{Kind: fabric.OpRead, ID: 13, Local: l.DR, Len: 8, Remote: l.ToA},
		{Kind: fabric.OpWrite, ID: 14, Local: l.DR, Len: 8, Remote: l.ToA},
	}
	if err := l.D.Post(ops); err != nil {
		t.Fatal(err)
	}
	cs := reap(t, l.D, len(ops), 8)
	for i, c := range cs {
		t.Logf("op %d: %v", c.ID, c.Err)
		if c.ID != ops[i].ID {
			t.Fatalf("completion %d has ID %d, want %d", i, c.ID, ops[i].ID)
		}
		switch {
		case i < 2 && c.Err != nil:
			t.Fatalf("op %d before the bad one: %v", c.ID, c.Err)
		case i >= 2 && !errors.Is(c.Err, fabric.ErrRemoteAccess):
			t.Fatalf("op %d: %v, want ErrRemoteAccess", c.ID, c.Err)
		}
	}
}

// TestHugePages: 2 MiB-multiple regions use huge pages when the system has
// free ones and fall back to 4 KiB pages otherwise; both are registered and
// work. Inside the test VM (JAKIRO_RDMA_VM=1) it sets vm.nr_hugepages to
// exercise both paths; elsewhere it only checks whichever path it gets.
func TestHugePages(t *testing.T) {
	ln := listenT(t, fabric.Options{})
	l := dialLink(t, ln, fabric.Options{}, 4096)
	c := l.D.(*conn)
	const nr = "/proc/sys/vm/nr_hugepages"
	try := func(want string) {
		r, err := l.D.Alloc(2 << 20)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		c.mu.RLock()
		huge := c.regs[len(c.regs)-1].huge
		c.mu.RUnlock()
		t.Logf("2 MiB region with %s huge pages free: huge=%v", want, huge)
		if (want == "some") != huge && want != "unknown" {
			t.Fatalf("huge=%v with %s huge pages", huge, want)
		}
		copy(r.Bytes()[1<<20:], "huge?")
		if err := fabric.Write(l.D, r, 1<<20, l.ToA, 0, 5); err != nil {
			t.Fatal(err)
		}
		if err := fabric.Read(l.D, r, 0, l.ToA, 0, 5); err != nil || string(r.Bytes()[:5]) != "huge?" {
			t.Fatalf("round trip through the region: %v %q", err, r.Bytes()[:5])
		}
	}
	if os.Getenv("JAKIRO_RDMA_VM") != "1" {
		try("unknown")
		return
	}
	for _, n := range []struct{ set, want string }{{"0", "no"}, {"4", "some"}} {
		if err := os.WriteFile(nr, []byte(n.set), 0); err != nil {
			t.Fatal(err)
		}
		try(n.want)
	}
}

// A listener with Options.Ready prepares that many connections' event
// channels, PDs and CQs before anyone dials; each join takes one (its
// own PD, never reused), the pool refills, and the connections work.
func TestReadyPool(t *testing.T) {
	requireRDMA(t)
	ln := listenT(t, fabric.Options{Ready: 2})
	rc, ok := ln.(fabric.ReadyCounter)
	if !ok {
		t.Fatal("a verbs listener does not report its pool (fabric.ReadyCounter)")
	}
	waitReady := func(n int) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); rc.ReadyStats().Ready < n; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("pool %+v: not %d ready after 10s", rc.ReadyStats(), n)
			}
		}
	}
	waitReady(2)
	for i := 0; i < 5; i++ {
		l := dialLink(t, ln, fabric.Options{}, 4096)
		copy(l.DR.Bytes(), "ready")
		if err := fabric.Write(l.D, l.DR, 0, l.ToA, 0, 5); err != nil {
			t.Fatal(err)
		}
		if got := string(l.AR.Bytes()[:5]); got != "ready" {
			t.Fatalf("join %d: the acceptor's region holds %q", i, got)
		}
		if st := rc.ReadyStats(); st.Ready > st.Size || st.Size != 2 {
			t.Fatalf("pool %+v: over its bound", st)
		}
		waitReady(2)
	}
	if st := rc.ReadyStats(); st.Taken != 5 || st.Missed != 0 {
		t.Fatalf("pool %+v: want 5 taken, none missed", st)
	}
}
