package shm

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabrictest"
)

func tempSock(t *testing.T) string {
	d, err := os.MkdirTemp("", "jkshm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return filepath.Join(d, "s.sock")
}

func TestSocketMode(t *testing.T) {
	for _, c := range []struct {
		query string
		want  os.FileMode
	}{{"", 0o600}, {"?mode=0660", 0o660}} {
		path := tempSock(t)
		ln, err := fabric.Listen("shm://"+path+c.query, fabric.Options{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != c.want {
			t.Errorf("socket %q mode %v, want socket %v", c.query, st.Mode(), c.want)
		}
		if ln.Addr() != "shm://"+path {
			t.Errorf("Addr %q", ln.Addr())
		}
		ln.Close()
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("socket file left after Close: %v", err)
		}
	}
	if _, err := fabric.Listen("shm://"+tempSock(t)+"?mode=999", fabric.Options{}); err == nil {
		t.Error("bad mode accepted")
	}
	if _, err := fabric.Listen("shm://host/x", fabric.Options{}); err == nil {
		t.Error("URL with host accepted")
	}
}

func TestStaleSocket(t *testing.T) {
	path := tempSock(t)
	// A socket file whose listener died.
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	ln, err := fabric.Listen("shm://"+path, fabric.Options{})
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer ln.Close()
	// A live one is not taken over.
	if ln2, err := fabric.Listen("shm://"+path, fabric.Options{}); err == nil {
		ln2.Close()
		t.Fatal("second Listen on a live socket succeeded")
	}
	// A regular file is never removed.
	file := filepath.Join(filepath.Dir(path), "file")
	os.WriteFile(file, []byte("x"), 0o600)
	if _, err := fabric.Listen("shm://"+file, fabric.Options{}); err == nil {
		t.Fatal("Listen over a regular file succeeded")
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("regular file removed: %v", err)
	}
}

// fakeDomain is a memfd laid out like a domain, with the given seals.
func fakeDomain(t *testing.T, seals int) int {
	t.Helper()
	return fakeDomainSized(t, seals, pageSize)
}

// fakeDomainSized is fakeDomain with a region area of size bytes (sparse).
func fakeDomainSized(t *testing.T, seals int, size int64) int {
	t.Helper()
	fd, err := unix.MemfdCreate("fake", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Ftruncate(fd, tableSize+size); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(fd, 0, tableSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	writeHeader(mem)
	unix.Munmap(mem)
	if seals != 0 {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
			t.Fatal(err)
		}
	}
	return fd
}

func dup(t *testing.T, fd int) int {
	t.Helper()
	n, err := unix.Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSealsVerified(t *testing.T) {
	d, err := newDomain(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	seals, err := unix.FcntlInt(uintptr(d.fd), unix.F_GET_SEALS, 0)
	if err != nil || seals&requiredSeals != requiredSeals {
		t.Fatalf("own domain seals %#x (%v), want %#x", seals, err, requiredSeals)
	}
	if err := unix.Ftruncate(d.fd, 4096); err == nil {
		t.Fatal("sealed domain could shrink")
	}

	// mapPeer refuses anything less than the required seals.
	for _, s := range []int{0, unix.F_SEAL_GROW | unix.F_SEAL_SEAL, unix.F_SEAL_SHRINK | unix.F_SEAL_GROW} {
		if mem, err := mapPeer(dup(t, fakeDomain(t, s)), MaxDialerDomain, MaxDialerDomain); !errors.Is(err, errProtocol) {
			if err == nil {
				unix.Munmap(mem)
			}
			t.Errorf("mapPeer with seals %#x: %v, want a protocol error", s, err)
		}
	}
	f, err := os.CreateTemp(t.TempDir(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(tableSize + pageSize)
	if mem, err := mapPeer(dup(t, int(f.Fd())), MaxDialerDomain, MaxDialerDomain); !errors.Is(err, errProtocol) {
		if err == nil {
			unix.Munmap(mem)
		}
		t.Errorf("mapPeer of a plain file: %v, want a protocol error", err)
	}
	f.Close()
	mem, err := mapPeer(dup(t, fakeDomain(t, requiredSeals)), MaxDialerDomain, MaxDialerDomain)
	if err != nil {
		t.Fatalf("mapPeer of a properly sealed domain: %v", err)
	}
	unix.Munmap(mem)

	// End to end: a dialer sending an unsealed memfd is refused and never
	// reaches Accept.
	path, ln := listenT(t)
	c := helloT(t, path, fakeDomain(t, 0))
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if m, err := recvMsg(c); err == nil && m.typ != msgReject {
		t.Fatalf("unsealed hello answered with message type %d", m.typ)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if s, err := ln.Accept(ctx); err == nil {
		s.Close()
		t.Fatal("an unsealed hello reached Accept")
	}

	// And an acceptor answering with an unsealed memfd fails the dialer.
	fpath := tempSock(t)
	fl, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: fpath, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	go func() {
		c, err := fl.AcceptUnix()
		if err != nil {
			return
		}
		defer c.Close()
		m, err := recvMsg(c)
		if err == nil && m.fd >= 0 {
			unix.Close(m.fd)
		}
		sendMsg(c, msgAccept, []byte("hi"), fakeDomain(t, unix.F_SEAL_SEAL))
		time.Sleep(time.Second)
	}()
	s, err := fabric.Dial(context.Background(), "shm://"+fpath, fabric.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ectx, ecancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ecancel()
	if conn, err := s.Establish(ectx, nil); !errors.Is(err, errProtocol) {
		if err == nil {
			conn.Close()
		}
		t.Fatalf("Establish against an unsealed accept: %v, want a protocol error", err)
	}
}

// TestGarbageHandshake sends malformed hellos; the listener drops them
// and keeps serving.
func TestGarbageHandshake(t *testing.T) {
	path := tempSock(t)
	ln, err := fabric.Listen("shm://"+path, fabric.Options{DomainSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	good := fakeDomain(t, requiredSeals)
	hdr := func(typ byte, n int) []byte {
		b := make([]byte, wireHdr+n)
		b[0], b[1], b[2], b[3] = 'J', 'K', 'S', 'H'
		b[4], b[5] = wireVersion, typ
		b[6] = byte(n)
		return b
	}
	bad := []struct {
		name string
		msg  []byte
		fds  []int
	}{
		{"Empty", []byte{1}, nil},
		{"Garbage", bytes.Repeat([]byte{0xAB}, 40), []int{good}},
		{"NoFD", hdr(msgHello, 0), nil},
		{"TwoFDs", hdr(msgHello, 0), []int{good, good}},
		{"TooMuchData", hdr(msgHello, fabric.MaxDialData+1), []int{good}},
		{"LengthMismatch", hdr(msgHello, 5)[:wireHdr+2], []int{good}},
		{"AcceptFromDialer", hdr(msgAccept, 0), []int{good}},
		{"Huge", make([]byte, 4096), []int{good}},
	}
	for _, b := range bad {
		c, err := net.Dial("unixpacket", path)
		if err != nil {
			t.Fatal(err)
		}
		var oob []byte
		if b.fds != nil {
			oob = unix.UnixRights(b.fds...)
		}
		if _, _, err := c.(*net.UnixConn).WriteMsgUnix(b.msg, oob, nil); err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		var buf [512]byte
		n, err := c.Read(buf[:])
		if err == nil && n > 5 && buf[5] != msgReject {
			t.Errorf("%s: answered with message type %d", b.name, buf[5])
		}
		c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	if s, err := ln.Accept(ctx); err == nil {
		s.Close()
		t.Fatal("a malformed hello reached Accept")
	}
	cancel()
	// The listener still works.
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		if s, err := ln.Accept(ctx); err == nil {
			if c, err := s.Establish(ctx, nil); err == nil {
				<-c.Done()
				c.Close()
			}
		}
	}()
	s, err := fabric.Dial(ctx, "shm://"+path, fabric.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Establish(ctx, []byte("after garbage"))
	if err != nil {
		t.Fatalf("Establish after garbage: %v", err)
	}
	c.Close()
}

// TestHostileTable feeds lookup peer tables full of lies: whatever the
// entries say, an access is refused or lands inside the region area.
func TestHostileTable(t *testing.T) {
	mem := make([]byte, tableSize+3*pageSize)
	size := uint64(len(mem))
	const key = 5<<slotBits | 7
	cases := []struct {
		name    string
		off, ln uint64
		d       fabric.Desc
		roff    uint64
		n       int
		ok      bool
	}{
		{"Good", tableSize, 100, fabric.Desc{Addr: tableSize, Key: key}, 10, 90, true},
		{"InTable", 0, 100, fabric.Desc{Addr: 0, Key: key}, 0, 8, false},
		{"PastMapping", size - 10, 100, fabric.Desc{Addr: size - 10, Key: key}, 0, 8, false},
		{"HugeLen", tableSize, ^uint64(0), fabric.Desc{Addr: tableSize, Key: key}, 1 << 40, 8, false},
		{"OffWraps", ^uint64(0) - 4, 100, fabric.Desc{Addr: ^uint64(0) - 4, Key: key}, 0, 8, false},
		{"AddrWraps", tableSize, 100, fabric.Desc{Addr: ^uint64(0), Key: key}, 2, 8, false},
		{"NegativeLen", tableSize, 100, fabric.Desc{Addr: tableSize, Key: key}, 0, -1, false},
		{"ZeroKey", tableSize, 100, fabric.Desc{Addr: tableSize, Key: 0}, 0, 1, false},
		{"SlotZero", tableSize, 100, fabric.Desc{Addr: tableSize, Key: 5 << slotBits}, 0, 1, false},
	}
	for _, c := range cases {
		clear(mem[:tableSize])
		publish(mem, 7, key, c.off, c.ln)
		b, err := lookup(mem, c.d, c.roff, c.n)
		if c.ok != (err == nil) {
			t.Errorf("%s: err %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !errors.Is(err, fabric.ErrRemoteAccess) {
			t.Errorf("%s: err %v, want ErrRemoteAccess", c.name, err)
		}
		if err == nil && len(b) != c.n {
			t.Errorf("%s: %d bytes, want %d", c.name, len(b), c.n)
		}
	}
}

func FuzzLookup(f *testing.F) {
	f.Add(uint64(tableSize), uint64(100), uint64(tableSize), uint64(3), 10)
	f.Add(^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), 1<<30)
	f.Fuzz(func(t *testing.T, off, ln, addr, roff uint64, n int) {
		mem := make([]byte, tableSize+2*pageSize)
		const key = 9<<slotBits | 3
		publish(mem, 3, key, off, ln)
		b, err := lookup(mem, fabric.Desc{Addr: addr, Key: key}, roff, n)
		if err != nil || n == 0 {
			return // a zero-length slice addresses nothing
		}
		// Whatever the table said, the bytes are in the region area.
		start := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(&mem[0]))
		if start < tableSize || start+uintptr(n) > uintptr(len(mem)) || len(b) != n {
			t.Fatalf("lookup returned %d bytes at %d", len(b), start)
		}
	})
}

// countMaps counts this process's mappings of the domain memfd with inode
// ino, by /proc/self/maps.
func countMaps(t *testing.T, ino uint64) int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("cannot read /proc/self/maps: %v", err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[4] == strconv.FormatUint(ino, 10) && strings.Contains(f[5], "jakiro-shm-domain") {
			n++
		}
	}
	return n
}

func domainInode(t *testing.T, c fabric.Conn) uint64 {
	if c.(*conn).d.fd >= 0 {
		t.Fatal("an established connection still holds its domain's memfd")
	}
	return c.(*conn).d.ino
}

// TestCloseUnmaps checks Close (and a rejected Setup) releases every
// mapping of both domains: the acceptor's before it returns, the
// dialer's right after.
func TestCloseUnmaps(t *testing.T) {
	path := tempSock(t)
	ln, err := fabric.Listen("shm://"+path, fabric.Options{DomainSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ach := make(chan fabric.Conn, 1)
	go func() {
		s, err := ln.Accept(ctx)
		if err != nil {
			ach <- nil
			return
		}
		s.Close() // reject the first
		s, err = ln.Accept(ctx)
		if err != nil {
			ach <- nil
			return
		}
		c, _ := s.Establish(ctx, nil)
		ach <- c
	}()
	s, _ := fabric.Dial(ctx, "shm://"+path, fabric.Options{DomainSize: 1 << 20})
	rejected := s.(*setup).d.fd
	var st unix.Stat_t
	if err := unix.Fstat(rejected, &st); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Establish(ctx, nil); !errors.Is(err, fabric.ErrRejected) {
		t.Fatalf("first dial: %v, want ErrRejected", err)
	}
	s.Close()
	if n := countMaps(t, st.Ino); n != 0 {
		t.Errorf("rejected dialer's domain still mapped %d times", n)
	}
	s, err = fabric.Dial(ctx, "shm://"+path, fabric.Options{DomainSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Establish(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := <-ach
	if a == nil {
		t.Fatal("acceptor failed")
	}
	di, ai := domainInode(t, d), domainInode(t, a)
	if nd, na := countMaps(t, di), countMaps(t, ai); nd != 2 || na != 2 {
		t.Errorf("domains mapped %d and %d times, want 2 each (owner and peer)", nd, na)
	}
	d.Close()
	// The dialer's Close leaves its munmaps to its watcher, at once.
	for deadline := time.Now().Add(5 * time.Second); countMaps(t, di) != 1 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
	}
	if n := countMaps(t, di); n != 1 {
		t.Errorf("dialer's domain mapped %d times 5 s after the dialer closed, want 1 (the acceptor's view)", n)
	}
	a.Close()
	if nd, na := countMaps(t, di), countMaps(t, ai); nd != 0 || na != 0 {
		t.Errorf("after Close domains still mapped %d and %d times", nd, na)
	}
}

// TestPostPollAllocs: the hot path allocates nothing.
func TestPostPollAllocs(t *testing.T) {
	ln, err := fabric.Listen("shm://"+tempSock(t), fabric.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := fabrictest.Connect(ctx, ln, fabric.Options{}, 4096, 4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.D.Close()
	defer p.A.Close()
	c, local, remote := p.D, p.DReg, p.ToA
	ops := []fabric.Op{
		{Kind: fabric.OpWrite, ID: 1, Local: local, Len: 32, Remote: remote},
		{Kind: fabric.OpRead, ID: 2, Local: local, LocalOff: 64, Len: 32, Remote: remote},
		{Kind: fabric.OpRead, ID: 3, Local: local, Len: 32, Remote: remote, RemoteOff: 1 << 20}, // remote error
	}
	cs := make([]fabric.Completion, 4)
	allocs := testing.AllocsPerRun(1000, func() {
		if err := c.Post(ops); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Poll(cs); n != 3 || err != nil {
			t.Fatalf("Poll %d %v", n, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Post+Poll: %v allocs/op, want 0", allocs)
	}
	if cs[2].Err != fabric.ErrRemoteAccess {
		t.Fatalf("third op: %v", cs[2].Err)
	}
}

// TestWaitingBound: dialers beyond maxReady unaccepted setups are
// rejected once the handshake bound passes instead of piling up; the
// others are still served.
func TestWaitingBound(t *testing.T) {
	o := fabric.Options{DomainSize: 64 << 10}
	ln, err := fabric.Listen("shm://"+tempSock(t), o)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const extra = 3
	type res struct {
		c   fabric.Conn
		err error
	}
	results := make(chan res, maxReady+extra)
	for i := 0; i < maxReady+extra; i++ {
		go func() {
			s, err := fabric.Dial(ctx, ln.Addr(), o)
			if err != nil {
				results <- res{nil, err}
				return
			}
			c, err := s.Establish(ctx, nil)
			if err != nil {
				s.Close()
			}
			results <- res{c, err}
		}()
	}
	for i := 0; i < extra; i++ {
		r := <-results
		if !errors.Is(r.err, fabric.ErrRejected) {
			if r.c != nil {
				r.c.Close()
			}
			t.Fatalf("early result %d: %v, want ErrRejected", i, r.err)
		}
	}
	for i := 0; i < maxReady; i++ {
		s, err := ln.Accept(ctx)
		if err != nil {
			t.Fatalf("Accept %d: %v", i, err)
		}
		c, err := s.Establish(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	for i := 0; i < maxReady; i++ {
		r := <-results
		if r.err != nil {
			t.Fatalf("dialer: %v", r.err)
		}
		r.c.Close()
	}
}

// TestOversizedPeerDomain: a dialer offering a domain larger than
// MaxDialerDomain (sparse, properly sealed: 16 TiB used to be mapped) is
// refused before the acceptor maps it, and the listener keeps serving.
func TestOversizedPeerDomain(t *testing.T) {
	huge := fakeDomainSized(t, requiredSeals, 2*MaxDialerDomain)
	if mem, err := mapPeer(dup(t, huge), MaxDialerDomain, MaxDialerDomain); !errors.Is(err, errProtocol) {
		if err == nil {
			unix.Munmap(mem)
		}
		t.Fatalf("mapPeer of a %d-byte domain: %v, want a protocol error", 2*MaxDialerDomain, err)
	}
	path, ln := listenT(t)
	c := helloT(t, path, huge)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	m, err := recvMsg(c)
	if err == nil && m.typ != msgReject {
		t.Fatalf("oversized hello answered with message type %d, want a reject", m.typ)
	}
	// An honest dialer still gets in.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		if s, err := fabric.Dial(ctx, "shm://"+path, fabric.Options{}); err == nil {
			if conn, err := s.Establish(ctx, nil); err == nil {
				<-ctx.Done()
				conn.Close()
			}
		}
	}()
	s, err := ln.Accept(ctx)
	if err != nil {
		t.Fatalf("honest dialer after an oversized one: %v", err)
	}
	s.Close()
	// A dialer asking for such a domain is told so at Dial.
	if _, err := fabric.Dial(ctx, "shm://"+path, fabric.Options{DomainSize: 2 * MaxDialerDomain}); err == nil {
		t.Fatal("Dial with a domain over MaxDialerDomain succeeded")
	}
}

// listenT listens on a fresh socket until the test ends.
func listenT(t *testing.T) (string, fabric.Listener) {
	t.Helper()
	path := tempSock(t)
	ln, err := fabric.Listen("shm://"+path, fabric.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return path, ln
}

// helloT connects to path by hand and sends a hello carrying fd.
func helloT(t *testing.T, path string, fd int) *net.UnixConn {
	t.Helper()
	c, err := net.Dial("unixpacket", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := sendMsg(c.(*net.UnixConn), msgHello, nil, fd); err != nil {
		t.Fatal(err)
	}
	return c.(*net.UnixConn)
}

// TestDialerContext: a dialer whose listener takes its hello and never
// answers (nobody calls Accept) gives up when its context ends, by
// deadline and by cancellation: its socket is outside the runtime's
// poller, so the wait is its own.
func TestDialerContext(t *testing.T) {
	o := fabric.Options{DomainSize: 64 << 10}
	ln, err := fabric.Listen("shm://"+tempSock(t), o)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, how := range []string{"deadline", "cancel"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
			if how == "cancel" {
				ctx, cancel = context.WithCancel(context.Background())
				time.AfterFunc(150*time.Millisecond, cancel)
			}
			defer cancel()
			start := time.Now()
			s, err := fabric.Dial(ctx, ln.Addr(), o)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				c, err := s.Establish(ctx, nil)
				if err == nil {
					c.Close()
				}
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(3 * time.Second):
				s.Close()
				t.Fatalf("Establish still waiting after %v, its context ended after 150ms", time.Since(start))
			}
			if err == nil {
				t.Fatal("Establish succeeded with nobody accepting")
			}
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				t.Fatalf("Establish: %v, want the context's error", err)
			}
			s.Close()
		})
	}
}
