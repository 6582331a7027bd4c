package memcache

import (
	"io"
	"testing"
)

// replayConn answers every Read with the same requests, as a client
// sending one round after another, and discards the answers.
type replayConn struct {
	fakeConn
	req []byte
}

func (r *replayConn) Read(b []byte) (int, error)  { return copy(b, r.req), nil }
func (r *replayConn) Write(b []byte) (int, error) { return len(b), nil }

// roundConn is a connection of a door on an inline backend holding
// somekey, fed req.
func roundConn(tb testing.TB, req string) *conn {
	d := fuzzDoor(tb)
	if err := newConn(d, &replayConn{req: []byte(roundCases[1].req)}).round(0); err != nil {
		tb.Fatal(err)
	}
	c := newConn(d, &replayConn{req: []byte(req)})
	for range 3 { // grow the pools and buffers first
		if err := c.round(0); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

var roundCases = []struct{ name, req string }{
	{"get", "get somekey\r\n"},
	{"set", "set somekey 0 0 8\r\n01234567\r\n"},
	{"binary-get", string(binRequest(opGetK, nil, []byte("somekey"), nil, 0))},
	{"miss", "get otherkey\r\n"},
	{"binary-miss", string(binRequest(opGet, nil, []byte("otherkey"), nil, 0))},
	{"pipelined", "get somekey\r\nset somekey 0 0 3\r\nabc\r\ngets somekey otherkey\r\n"},
}

// A get or set round (read, parse, run, answer) allocates nothing: the
// door's cost per command must not include the collector's.
func TestRoundAllocs(t *testing.T) {
	for _, tc := range roundCases {
		c := roundConn(t, tc.req)
		if n := testing.AllocsPerRun(100, func() {
			if err := c.round(0); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per round", tc.name, n)
		}
	}
}

func BenchmarkRound(b *testing.B) {
	for _, tc := range roundCases {
		b.Run(tc.name, func(b *testing.B) {
			c := roundConn(b, tc.req)
			b.ReportAllocs()
			for b.Loop() {
				if err := c.round(0); err != nil && err != io.EOF {
					b.Fatal(err)
				}
			}
		})
	}
}
