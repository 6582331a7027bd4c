package tcp

import (
	"net"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// The accept loop runs a handshake itself only when the whole hello is
// there: a part of one, or bytes that are no hello, leave it to a
// goroutine of its own, so no peer can make the loop wait.
func TestArrivedWholeHelloOnly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hello := putHS(nil, kindHello, 8, make([]byte, fabric.MaxDialData))
	cases := []struct {
		name  string
		sent  []byte
		whole bool
	}{
		{"nothing", nil, false},
		{"header only", hello[:hsSize], false},
		{"all but a byte", hello[:len(hello)-1], false},
		{"whole", hello, true},
		{"not a hello", append([]byte("GET / HTTP/1.1\r\n"), make([]byte, 60)...), false},
		{"an accept", putHS(nil, kindAccept, 8, nil), false},
	}
	for _, tc := range cases {
		d, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		a, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if len(tc.sent) > 0 {
			if _, err := d.Write(tc.sent); err != nil {
				t.Fatal(err)
			}
		}
		// Loopback delivers within the write; give a slow machine a while
		// (and what is not a whole hello the time to look like one).
		if !tc.whole {
			time.Sleep(5 * time.Millisecond)
		}
		got := false
		for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if got = arrived(a); got || !tc.whole {
				break
			}
		}
		if got != tc.whole {
			t.Errorf("%s: arrived %v, want %v", tc.name, got, tc.whole)
		}
		d.Close()
		a.Close()
	}
}
