package rfp

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// authServer listens on loopback tcp with token and accepts until the
// test ends, reporting each Accept's error.
func authServer(t *testing.T, token string) (string, <-chan error) {
	t.Helper()
	ln, err := Listen("tcp://127.0.0.1:0", ListenConfig{Partitions: 1, MaxValue: 1024, AuthToken: token})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			s, err := ln.Accept(ctx)
			if ctx.Err() != nil {
				return
			}
			errs <- err
			if err == nil {
				defer s.Close()
			}
		}
	}()
	t.Cleanup(func() { cancel(); ln.Close(); <-done })
	return ln.Addr(), errs
}

func dialAuth(t *testing.T, addr, token string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	link, err := Dial(ctx, addr, DialConfig{AuthToken: token})
	if err == nil {
		link.Conn.Close()
	}
	return err
}

func TestAuth(t *testing.T) {
	t.Setenv(AuthTokenEnv, "")
	addr, errs := authServer(t, "s3cret")
	for _, tc := range []struct {
		name, token string
		ok          bool
	}{
		{"none", "", false},
		{"wrong", "guess", false},
		{"right", "s3cret", true},
	} {
		err := dialAuth(t, addr, tc.token)
		serr := <-errs
		if tc.ok {
			if err != nil || serr != nil {
				t.Fatalf("%s token: Dial = %v, server Accept = %v", tc.name, err, serr)
			}
			continue
		}
		if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), AuthTokenEnv) {
			t.Fatalf("%s token: Dial = %v, want ErrAuth naming %s", tc.name, err, AuthTokenEnv)
		}
		var he *HandshakeError
		if !errors.As(serr, &he) || !errors.Is(serr, ErrAuth) {
			t.Fatalf("%s token: server Accept = %v, want a HandshakeError wrapping ErrAuth", tc.name, serr)
		}
	}
	// Clients take the token from the environment too.
	t.Setenv(AuthTokenEnv, "s3cret")
	if err := dialAuth(t, addr, ""); err != nil {
		t.Fatalf("token from %s: %v", AuthTokenEnv, err)
	}
	<-errs
}

// A server without a token serves clients with or without one.
func TestNoAuthServer(t *testing.T) {
	t.Setenv(AuthTokenEnv, "")
	addr, errs := authServer(t, "")
	for _, tok := range []string{"", "anything"} {
		if err := dialAuth(t, addr, tok); err != nil {
			t.Fatalf("token %q: %v", tok, err)
		}
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestHelloProofRoundTrip(t *testing.T) {
	h := Hello{Version: Version, Slots: 16}.withAuth("tok")
	b := h.Put()
	if len(b) > fabric.MaxDialData {
		t.Fatalf("hello of %d bytes exceeds fabric.MaxDialData %d", len(b), fabric.MaxDialData)
	}
	got, err := ParseHello(b)
	if err != nil || got != h {
		t.Fatalf("ParseHello = %+v, %v; want %+v", got, err, h)
	}
	if _, err := ParseHello(b[:helloSize+3]); err == nil {
		t.Fatal("a hello cut inside its proof parsed")
	}
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr            string
		token, insecure bool
		ok              bool
		says            string
	}{
		{"shm:///tmp/x.sock", false, false, true, ""},
		{"tcp://127.0.0.1:7", false, false, true, ""},
		{"tcp://[::1]:7", false, false, true, ""},
		{"tcp://localhost:7", false, false, true, ""},
		{"tcp://:7", false, false, false, "every interface"},
		{"tcp://:7", true, true, false, "every interface"},
		{"tcp://0.0.0.0:7", false, false, false, "--auth-token"},
		{"rdma://192.168.77.1:7", false, false, false, "--insecure"},
		{"tcp://0.0.0.0:7", true, false, true, ""},
		{"tcp://10.1.2.3:7", false, true, true, ""},
	} {
		err := CheckListen(tc.addr, tc.token, tc.insecure)
		if tc.ok != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.says) {
			t.Errorf("CheckListen(%q, token=%v, insecure=%v) = %v", tc.addr, tc.token, tc.insecure, err)
		}
	}
}
