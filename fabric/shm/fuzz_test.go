package shm

import (
	"bytes"
	"encoding/binary"
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/internal/eventbell"
	"github.com/jakiro-kv/jakiro/internal/fuzzseed"
)

// Fuzz targets for what an shm peer sends: handshake messages (bytes and
// the fds riding along as SCM_RIGHTS) and the domain memfd it maps.
//
//	go test ./fabric/shm -run '^$' -fuzz '^FuzzWireMessage$' -fuzztime 30s

// seqpacketPair is a connected SOCK_SEQPACKET pair: raw for the fuzzer's
// bytes, c for recvMsg.
func seqpacketPair(t *testing.T) (raw int, c *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[1]), "seqpacket")
	fc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); fc.Close() })
	return fds[0], fc.(*net.UnixConn)
}

// openFDs is the set of this process's open file descriptors. Other
// tests' connections may close theirs meanwhile (a dialer's socket is
// closed by its watcher after Close returns), so the checks compare sets:
// an fd opened here and left open is a leak, one closed elsewhere is not.
func openFDs(t *testing.T) map[string]bool {
	sockets.start() // the process's socket watcher keeps one fd from its first connection on
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count fds: %v", err)
	}
	fds := make(map[string]bool, len(ents))
	for _, e := range ents {
		fds[e.Name()] = true
	}
	return fds
}

// opened is how many of after (fds, or mapped domains) were not in before.
func opened(before, after map[string]bool) int {
	n := 0
	for fd := range after {
		if !before[fd] {
			n++
		}
	}
	return n
}

// fdOfKind opens an fd of a kind a peer might pass: 1 a sealed domain
// memfd, 2 an eventfd, 3 a pipe end (neither).
func fdOfKind(t *testing.T, kind byte) int {
	switch kind {
	case 1:
		return fakeDomain(t, requiredSeals)
	case 2:
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	default:
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
		return p[0]
	}
}

func wireBytes(typ byte, data []byte) []byte {
	b := make([]byte, wireHdr+len(data))
	binary.LittleEndian.PutUint32(b, wireMagic)
	b[4], b[5] = wireVersion, typ
	binary.LittleEndian.PutUint16(b[6:], uint16(len(data)))
	copy(b[wireHdr:], data)
	return b
}

// FuzzWireMessage sends the fuzzer's bytes as one handshake datagram with
// fds described by fdSpec (bits 0-1: the first fd's kind, 0 none; bit 7:
// then two bell page memfds; bits 2-5: that many more eventfds; bit 6: one
// more pipe end among them) and checks
// recvMsg accepts only well-formed messages and leaks no fd either way.
func FuzzWireMessage(f *testing.F) {
	fuzzseed.Add(f, "hello", wireBytes(msgHello, []byte("private")), byte(1))
	fuzzseed.Add(f, "accept-with-bells", wireBytes(msgAccept, []byte("welcome")), byte(1|2<<2|1<<7))
	fuzzseed.Add(f, "accept-bells-without-pages", wireBytes(msgAccept, []byte("welcome")), byte(1|2<<2))
	fuzzseed.Add(f, "reject", wireBytes(msgReject, nil), byte(0))
	fuzzseed.Add(f, "hello-without-fd", wireBytes(msgHello, nil), byte(0))
	fuzzseed.Add(f, "reject-with-fd", wireBytes(msgReject, nil), byte(1))
	fuzzseed.Add(f, "hello-with-bells", wireBytes(msgHello, nil), byte(1|1<<2))
	fuzzseed.Add(f, "bell-not-eventfd", wireBytes(msgAccept, nil), byte(1|1<<2|1<<6|1<<7))
	fuzzseed.Add(f, "hello-borrow", wireBytes(msgHelloBorrow, []byte("private")), byte(0))
	fuzzseed.Add(f, "hello-borrow-with-fd", wireBytes(msgHelloBorrow, nil), byte(1))
	fuzzseed.Add(f, "accept-lent", wireBytes(msgAcceptLent, []byte("welcome")), byte(1|1<<7))
	fuzzseed.Add(f, "accept-lent-with-bells", wireBytes(msgAcceptLent, []byte("welcome")), byte(1|2<<2|1<<7))
	fuzzseed.Add(f, "accept-lent-one-fd", wireBytes(msgAcceptLent, []byte("welcome")), byte(1))
	fuzzseed.Add(f, "hello-data-over-limit", wireBytes(msgHello, make([]byte, fabric.MaxDialData+1)), byte(1))
	fuzzseed.Add(f, "accept-data-over-limit", wireBytes(msgAccept, make([]byte, sourceBytes+fabric.MaxAcceptData+1)), byte(1))
	long := wireBytes(msgAccept, make([]byte, 8))
	binary.LittleEndian.PutUint16(long[6:], 9)
	fuzzseed.Add(f, "length-past-datagram", long, byte(1))
	fuzzseed.Add(f, "truncated", wireBytes(msgAccept, make([]byte, maxMsg)), byte(1))
	fuzzseed.Add(f, "unknown-type", wireBytes(9, nil), byte(0))
	fuzzseed.Add(f, "bad-magic", []byte("JKRO\x01\x01\x00\x00"), byte(1))
	fuzzseed.Add(f, "short", []byte{0x4a, 0x4b}, byte(0))
	f.Fuzz(func(t *testing.T, msg []byte, fdSpec byte) {
		raw, c := seqpacketPair(t)
		var fds []int
		if k := fdSpec & 3; k != 0 {
			fds = append(fds, fdOfKind(t, k))
		}
		if fdSpec&(1<<7) != 0 {
			fds = append(fds, fdOfKind(t, 1), fdOfKind(t, 1))
		}
		for range fdSpec >> 2 & 15 {
			fds = append(fds, fdOfKind(t, 2))
		}
		if fdSpec&(1<<6) != 0 {
			fds = append(fds, fdOfKind(t, 3))
		}
		var oob []byte
		if len(fds) > 0 {
			oob = unix.UnixRights(fds...)
		}
		if err := unix.Sendmsg(raw, msg, oob, nil, 0); err != nil {
			t.Skipf("datagram of %d bytes not sent: %v", len(msg), err)
		}
		before := openFDs(t)
		m, err := recvMsg(c)
		if err != nil {
			if n := opened(before, openFDs(t)); n != 0 {
				t.Fatalf("rejected message left %d fds open", n)
			}
			return
		}
		received := len(m.bells)
		if m.fd >= 0 {
			received++
		}
		if m.lent >= 0 {
			received++
		}
		defer func() {
			m.close()
			if n := opened(before, openFDs(t)); n != 0 {
				t.Fatalf("accepted message: %d fds open after closing what it carried", n)
			}
		}()
		if received != len(fds) {
			t.Fatalf("sent %d fds, message carries %d", len(fds), received)
		}
		limit := map[byte]int{msgHello: fabric.MaxDialData, msgHelloBorrow: fabric.MaxDialData,
			msgAccept: sourceBytes + fabric.MaxAcceptData, msgAcceptLent: sourceBytes + fabric.MaxAcceptData, msgReject: 0}
		lim, known := limit[m.typ]
		switch {
		case !known:
			t.Fatalf("accepted unknown type %d", m.typ)
		case len(m.data) > lim:
			t.Fatalf("type %d with %d bytes, limit %d", m.typ, len(m.data), lim)
		case (m.typ == msgReject || m.typ == msgHelloBorrow) != (m.fd < 0):
			t.Fatalf("type %d with fd %d", m.typ, m.fd)
		case (m.typ == msgAcceptLent) != (m.lent >= 0):
			t.Fatalf("type %d with lent fd %d", m.typ, m.lent)
		case (m.typ == msgHello || m.typ == msgHelloBorrow) && len(m.bells) > 0:
			t.Fatalf("hello with %d doorbells", len(m.bells))
		case !bytes.Equal(wireBytes(m.typ, m.data), msg):
			t.Fatalf("accepted %x as type %d data %x", msg, m.typ, m.data)
		}
		// recvMsg passes doorbell fds on as they came; their kinds are
		// checked where they are opened, once (eventbell.Open): fds that
		// are not pages first, then eventfds, never open as bells.
		if len(m.bells) > 0 {
			kinds := true
			dups := make([]int, len(m.bells))
			for i, b := range m.bells {
				kinds = kinds && eventbell.IsFD(b) == (i >= 2)
				d, err := unix.Dup(b)
				if err != nil {
					t.Fatal(err)
				}
				dups[i] = d
			}
			r, err := eventbell.Open(dups, -1)
			if err == nil {
				r.Close()
				if !kinds {
					t.Fatalf("doorbell fds of the wrong kinds opened as bells")
				}
			}
		}
	})
}

// FuzzWireRoundTrip: what sendMsg sends, recvMsg reads back.
func FuzzWireRoundTrip(f *testing.F) {
	fuzzseed.Add(f, "hello", byte(msgHello), []byte("private"), uint8(0))
	fuzzseed.Add(f, "accept-max-bells", byte(msgAccept), make([]byte, fabric.MaxAcceptData), uint8(maxBells))
	// Found by the fuzzer: 253 bells and the memfd are one fd more than
	// SCM_RIGHTS carries; an shm listener with that many failed every
	// handshake (now Listen refuses more than maxBells).
	fuzzseed.Add(f, "accept-253-bells", byte(msgAccept), []byte("0"), uint8(253))
	fuzzseed.Add(f, "reject", byte(msgReject), []byte(nil), uint8(0))
	fuzzseed.Add(f, "hello-borrow", byte(msgHelloBorrow), []byte("private"), uint8(0))
	fuzzseed.Add(f, "accept-lent-max-bells", byte(msgAcceptLent), make([]byte, fabric.MaxAcceptData), uint8(maxBells))
	f.Fuzz(func(t *testing.T, typ byte, data []byte, bells uint8) {
		typ = msgHello + (typ+4)%5 // 1 to 5 stay themselves
		fd := -1
		var bellFDs []int
		switch typ {
		case msgHello:
			data = data[:min(len(data), fabric.MaxDialData)]
			fd = fdOfKind(t, 1)
		case msgHelloBorrow:
			data = data[:min(len(data), fabric.MaxDialData)]
		case msgAccept, msgAcceptLent:
			data = data[:min(len(data), sourceBytes+fabric.MaxAcceptData)]
			fd = fdOfKind(t, 1)
			if typ == msgAcceptLent {
				bellFDs = append(bellFDs, fdOfKind(t, 1)) // the lent domain goes first
			}
			if int(bells) > maxBells {
				// More than one message carries: Listen must refuse to offer them.
				ln, err := fabric.Listen("shm://"+tempSock(t), fabric.Options{Doorbells: int(bells)})
				if err == nil {
					ln.Close()
					t.Fatalf("Listen offers %d doorbells, an accept carries at most %d", bells, maxBells)
				}
				return
			}
			if bells > 0 {
				bellFDs = append(bellFDs, fdOfKind(t, 1), fdOfKind(t, 1))
			}
			for range int(bells) {
				bellFDs = append(bellFDs, fdOfKind(t, 2))
			}
		case msgReject:
			data = nil
		}
		raw, c := seqpacketPair(t)
		rf := os.NewFile(uintptr(raw), "raw")
		rc, err := net.FileConn(rf)
		rf.Close()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		if err := sendMsg(rc.(*net.UnixConn), typ, data, fd, bellFDs...); err != nil {
			t.Fatal(err)
		}
		m, err := recvMsg(c)
		if err != nil {
			t.Fatalf("type %d, %d bytes, %d bells: %v", typ, len(data), len(bellFDs), err)
		}
		got, hasFD := len(m.bells), m.fd >= 0
		if m.lent >= 0 {
			got++
		}
		m.close()
		if m.typ != typ || !bytes.Equal(m.data, data) || got != len(bellFDs) || hasFD != (fd >= 0) {
			t.Fatalf("sent type %d %x with %d bells, got type %d %x with %d", typ, data, len(bellFDs), m.typ, m.data, len(m.bells))
		}
	})
}

// FuzzDomain maps a memfd whose size, seals and first bytes (its table
// header) the fuzzer picks, as a peer's domain: mapPeer accepts only a
// sealed memfd within its size limit with a valid header, maps no more
// than its window, and closes the fd always.
func FuzzDomain(f *testing.F) {
	hdr := make([]byte, 32)
	writeHeader(hdr)
	fuzzseed.Add(f, "valid", hdr, uint16(1), uint8(requiredSeals))
	fuzzseed.Add(f, "unsealed", hdr, uint16(1), uint8(0))
	fuzzseed.Add(f, "can-shrink", hdr, uint16(1), uint8(unix.F_SEAL_GROW|unix.F_SEAL_SEAL))
	fuzzseed.Add(f, "smaller-than-table", hdr, uint16(0), uint8(requiredSeals))
	bad := bytes.Clone(hdr)
	binary.LittleEndian.PutUint32(bad[12:], tableSlots*2)
	fuzzseed.Add(f, "more-slots", bad, uint16(1), uint8(requiredSeals))
	bad = bytes.Clone(hdr)
	bad[0] ^= 1
	fuzzseed.Add(f, "bad-magic", bad, uint16(1), uint8(requiredSeals))
	f.Fuzz(func(t *testing.T, head []byte, pages uint16, seals uint8) {
		fd, err := unix.MemfdCreate("jakiro-fuzz-domain", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
		if err != nil {
			t.Skipf("memfd: %v", err)
		}
		// Sizes around the table: a page short of it up to 64 pages past.
		size := int64(tableSize) - pageSize + int64(pages%66)*pageSize
		if err := unix.Ftruncate(fd, size); err != nil {
			t.Fatal(err)
		}
		head = head[:min(len(head), int(size))]
		if _, err := unix.Pwrite(fd, head, 0); err != nil {
			t.Fatal(err)
		}
		if s := int(seals) & (unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE); s != 0 {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, s); err != nil {
				t.Fatal(err)
			}
		}
		const limit = 32 * pageSize  // half the sizes tried are over it
		const window = 16 * pageSize // an acceptor's own DomainSize
		before := openFDs(t)
		mem, err := mapPeer(fd, limit, window)
		_, ferr := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0) // before openFDs reuses the number
		if n := opened(before, openFDs(t)); ferr != unix.EBADF || n != 0 {
			t.Fatalf("mapPeer left its fd %d open (%v) or opened %d more, want it closed", fd, ferr, n)
		}
		if err != nil {
			return
		}
		defer unix.Munmap(mem)
		if int64(len(mem)) != min(size, tableSize+window) || size > tableSize+limit || checkHeader(mem) != nil || int(seals)&requiredSeals != requiredSeals {
			t.Fatalf("mapped a domain of %d bytes (memfd %d), seals %#x, header %x", len(mem), size, seals, mem[:32])
		}
	})
}
