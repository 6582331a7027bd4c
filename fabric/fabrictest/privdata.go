package fabrictest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
)

// testPrivateData checks the handshake: private data at the limits in both
// directions, empty data, over-limit data, and rejection.
func testPrivateData(t *testing.T, newAddr func(*testing.T) string) {
	ln := listen(t, newAddr, fabric.Options{})

	// handshake runs one dial/accept with the given data; acceptFn decides
	// what the acceptor does with its Setup.
	type result struct {
		c   fabric.Conn
		err error
	}
	dial := func(ctx context.Context, data []byte) <-chan result {
		ch := make(chan result, 1)
		go func() {
			s, err := fabric.Dial(ctx, ln.Addr(), fabric.Options{})
			if err != nil {
				ch <- result{nil, err}
				return
			}
			if s.PeerData() != nil {
				s.Close()
				ch <- result{nil, errors.New("dialer Setup.PeerData is not nil")}
				return
			}
			c, err := s.Establish(ctx, data)
			if err != nil {
				s.Close()
			}
			ch <- result{c, err}
		}()
		return ch
	}

	t.Run("Limits", func(t *testing.T) {
		ctx := ctxFor(t)
		for _, sz := range [][2]int{{fabric.MaxDialData, fabric.MaxAcceptData}, {0, 0}, {1, 1}} {
			dd, ad := pattern(1, sz[0]), pattern(2, sz[1])
			ch := dial(ctx, dd)
			s, err := ln.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(s.PeerData(), dd) {
				t.Fatalf("acceptor Setup.PeerData = %x, want %x", s.PeerData(), dd)
			}
			a, err := s.Establish(ctx, ad)
			if err != nil {
				s.Close()
				t.Fatalf("acceptor Establish with %d bytes: %v", len(ad), err)
			}
			defer a.Close()
			r := <-ch
			if r.err != nil {
				t.Fatalf("dialer with %d bytes: %v", len(dd), r.err)
			}
			defer r.c.Close()
			if !bytes.Equal(r.c.PeerData(), ad) {
				t.Fatalf("dialer Conn.PeerData = %x, want %x", r.c.PeerData(), ad)
			}
			if !bytes.Equal(a.PeerData(), dd) {
				t.Fatalf("acceptor Conn.PeerData = %x, want %x", a.PeerData(), dd)
			}
		}
	})
	t.Run("DialDataTooLong", func(t *testing.T) {
		ctx := ctxFor(t)
		s, err := fabric.Dial(ctx, ln.Addr(), fabric.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if c, err := s.Establish(ctx, make([]byte, fabric.MaxDialData+1)); !errors.Is(err, fabric.ErrPrivateData) {
			if err == nil {
				c.Close()
			}
			t.Fatalf("Establish with %d bytes: %v, want ErrPrivateData", fabric.MaxDialData+1, err)
		}
	})
	t.Run("AcceptDataTooLong", func(t *testing.T) {
		ctx := ctxFor(t)
		ch := dial(ctx, []byte("x"))
		s, err := ln.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := s.Establish(ctx, make([]byte, fabric.MaxAcceptData+1)); !errors.Is(err, fabric.ErrPrivateData) {
			if err == nil {
				c.Close()
			}
			s.Close()
			t.Fatalf("Establish with %d bytes: %v, want ErrPrivateData", fabric.MaxAcceptData+1, err)
		}
		s.Close() // now reject
		if r := <-ch; !errors.Is(r.err, fabric.ErrRejected) {
			if r.c != nil {
				r.c.Close()
			}
			t.Fatalf("dialer after reject: %v, want ErrRejected", r.err)
		}
	})
	t.Run("Reject", func(t *testing.T) {
		ctx := ctxFor(t)
		ch := dial(ctx, []byte("please"))
		s, err := ln.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Setup.Close: %v", err)
		}
		if r := <-ch; !errors.Is(r.err, fabric.ErrRejected) {
			if r.c != nil {
				r.c.Close()
			}
			t.Fatalf("dialer: %v, want ErrRejected", r.err)
		}
		// The listener still accepts.
		p := connect(t, ln, fabric.Options{}, 64, 64)
		if err := execOK(p.D, read(p.DReg, 0, p.ToA, 0, 64, 1)); err != nil {
			t.Fatal(err)
		}
	})
}
