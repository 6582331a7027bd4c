package shm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// A dialer that borrows its domain (Options.BorrowDomain) gets a fresh one
// from the listener's pool at every join: never one another client had,
// zeroed even after a client wrote its whole region and vanished, reached
// by the acceptor, and no larger than the listener's DomainSize. Its
// regions come once it is established.
func TestBorrowDomain(t *testing.T) {
	const size = 1 << 20
	ln, err := fabric.Listen("shm://"+tempSock(t), fabric.Options{DomainSize: size, Ready: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o := fabric.Options{BorrowDomain: true}
	seen := map[uint64]bool{}
	for i := range 6 {
		s, err := fabric.Dial(ctx, ln.Addr(), o)
		if err != nil {
			t.Fatal(err)
		}
		if r, err := s.Alloc(4096); err == nil {
			r.Close()
			t.Fatalf("join %d: a borrowing dialer allocated a region before its domain came", i)
		}
		type acc struct {
			c   fabric.Conn
			r   *fabric.Region
			err error
		}
		ach := make(chan acc, 1)
		go func() {
			as, err := ln.Accept(ctx)
			if err != nil {
				ach <- acc{err: err}
				return
			}
			r, err := as.Alloc(4096)
			if err != nil {
				as.Close()
				ach <- acc{err: err}
				return
			}
			c, err := as.Establish(ctx, nil)
			ach <- acc{c, r, err}
		}()
		dc, err := s.Establish(ctx, []byte("borrower"))
		if err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
		a := <-ach
		if a.err != nil {
			t.Fatalf("join %d: acceptor: %v", i, a.err)
		}
		ino := domainInode(t, dc)
		if seen[ino] {
			t.Fatalf("join %d got a domain an earlier client had", i)
		}
		seen[ino] = true
		if _, err := dc.Alloc(2 * size); !errors.Is(err, fabric.ErrNoMemory) {
			t.Fatalf("join %d: a region over the lent domain: %v, want ErrNoMemory", i, err)
		}
		r, err := dc.Alloc(64 << 10)
		if err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
		if !bytes.Equal(r.Bytes(), make([]byte, 64<<10)) {
			t.Fatalf("join %d: its region is not zeroed", i)
		}
		// The acceptor reaches the region through its own mapping.
		copy(a.r.Bytes(), bytes.Repeat([]byte{0x5a}, 4096))
		if err := fabric.Write(a.c, a.r, 0, r.Desc(), 4096, 4096); err != nil {
			t.Fatalf("join %d: acceptor's WRITE into the lent domain: %v", i, err)
		}
		if !bytes.Equal(r.Bytes()[4096:8192], a.r.Bytes()) {
			t.Fatalf("join %d: the acceptor's WRITE did not land in the dialer's region", i)
		}
		// Scribble over everything, then vanish.
		copy(r.Bytes(), bytes.Repeat([]byte{0xa5}, 64<<10))
		dc.Close()
		a.c.Close()
	}
}

// A listener that answers a borrowing dialer with anything but a sound
// lent domain (none, an unsealed memfd, one with no room for a region)
// fails the join with a protocol error and leaves no descriptor open.
func TestBorrowHostileAccept(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  byte
		lent func(t *testing.T) int // -1: none
	}{
		{"PlainAccept", msgAccept, func(*testing.T) int { return -1 }},
		{"Unsealed", msgAcceptLent, func(t *testing.T) int { return fakeDomain(t, 0) }},
		{"NoRoom", msgAcceptLent, func(t *testing.T) int { return fakeDomainSized(t, requiredSeals, 0) }},
		{"NotAMemfd", msgAcceptLent, func(t *testing.T) int { return fdOfKind(t, 3) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tempSock(t)
			ul, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
			if err != nil {
				t.Fatal(err)
			}
			defer ul.Close()
			own, lent := fakeDomain(t, requiredSeals), tc.lent(t)
			served, gone := make(chan error, 1), make(chan struct{})
			go func() {
				defer close(gone)
				c, err := ul.AcceptUnix()
				if err != nil {
					served <- err
					return
				}
				defer c.Close()
				m, err := recvMsg(c)
				if err != nil {
					served <- err
					return
				}
				m.close()
				if m.typ != msgHelloBorrow {
					served <- errors.New("the borrowing dialer sent no helloBorrow")
					return
				}
				var src [sourceBytes]byte
				binary.LittleEndian.PutUint32(src[:], ^uint32(0))
				var more []int
				if lent >= 0 {
					more = []int{lent}
				}
				served <- sendMsg(c, tc.typ, src[:], own, more...)
				var b [1]byte
				c.Read(b[:]) // until the dialer has given up
			}()
			before := openFDs(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := fabric.Dial(ctx, "shm://"+path, fabric.Options{BorrowDomain: true})
			if err != nil {
				t.Fatal(err)
			}
			c, err := s.Establish(ctx, nil)
			if err == nil {
				c.Close()
				t.Fatal("a borrowing dialer took an accept without a sound lent domain")
			}
			if !errors.Is(err, errProtocol) {
				t.Fatalf("Establish: %v, want a protocol error", err)
			}
			if err := <-served; err != nil {
				t.Fatal(err)
			}
			<-gone // its end of the socket closed
			if n := opened(before, openFDs(t)); n != 0 {
				t.Fatalf("%d descriptors left open by the failed join", n)
			}
			if n := len(fakeMaps(t)); n != 0 {
				t.Fatalf("%d mappings of the listener's memfds left", n)
			}
		})
	}
}

// fakeMaps is the set of this process's mappings of fake domains
// (fakeDomain's memfds): a failed join must unmap what it mapped.
func fakeMaps(t *testing.T) map[string]bool { return memfdMaps(t, "fake") }

// A listener answers a hello of either kind: dialers that make their own
// domain (older clients, the conformance suite) and borrowers share it.
func TestBorrowBesideOwnDomain(t *testing.T) {
	ln, err := fabric.Listen("shm://"+tempSock(t), fabric.Options{DomainSize: 1 << 20, Ready: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, o := range []fabric.Options{{BorrowDomain: true}, {}, {BorrowDomain: true}, {}} {
		go func() {
			if as, err := ln.Accept(ctx); err == nil {
				if c, err := as.Establish(ctx, nil); err == nil {
					<-ctx.Done()
					c.Close()
				}
			}
		}()
		s, err := fabric.Dial(ctx, ln.Addr(), o)
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.Establish(ctx, nil)
		if err != nil {
			t.Fatalf("join %d (borrow %v): %v", i, o.BorrowDomain, err)
		}
		if (c.(*conn).d.size == 1<<20) != o.BorrowDomain {
			t.Errorf("join %d (borrow %v): a domain of %d bytes", i, o.BorrowDomain, c.(*conn).d.size)
		}
		c.Close()
	}
}

// A dialer that sends a listener an accept (with a domain and bells) where
// a hello belongs is turned away, and the listener keeps none of the
// descriptors it carried.
func TestAcceptToListenerLeavesNoFD(t *testing.T) {
	path, _ := listenT(t)
	before := openFDs(t)
	for _, typ := range []byte{msgAccept, msgAcceptLent} {
		c, err := net.Dial("unixpacket", path)
		if err != nil {
			t.Fatal(err)
		}
		fds := []int{fdOfKind(t, 1), fdOfKind(t, 1), fdOfKind(t, 2)}
		if typ == msgAcceptLent {
			fds = append(fds, fdOfKind(t, 1))
		}
		var src [sourceBytes]byte
		if err := sendMsg(c.(*net.UnixConn), typ, src[:], fdOfKind(t, 1), fds...); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var b [64]byte
		c.Read(b[:]) // EOF once the listener has dropped it
		c.Close()
	}
	// The fds this test opened are closed at its cleanup: what is left
	// open beyond them now was received by the listener.
	mine := len(fakeMaps(t)) // none mapped
	deadline := time.Now().Add(5 * time.Second)
	for opened(before, openFDs(t)) > 9 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := opened(before, openFDs(t)); n > 9 || mine != 0 {
		t.Fatalf("%d descriptors open beyond the 9 the test made, %d fake domains mapped", n, mine)
	}
}
