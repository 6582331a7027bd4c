package memcache

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/internal/fuzzseed"
)

// Fuzz targets for the two parsers of what clients send: a connection is
// fed the input (all of it, as pipelined requests) and runs it on a real
// store; nothing may panic or hang, and every input ends the connection.
// `make fuzz` runs each for $(FUZZTIME) (scripts/fuzz.sh finds them).

func fuzzDoor(tb testing.TB) *Door {
	return newDoor(Config{ReadTimeout: time.Second, WriteTimeout: time.Second, RunTimeout: time.Second},
		newTestBackend(tb, 2, true), nil)
}

func fuzzConn(d *Door, in []byte) []byte {
	f := &fakeConn{r: bytes.NewReader(in)}
	c := newConn(d, f)
	c.serve()
	return f.out.Bytes()
}

func FuzzASCII(f *testing.F) {
	for name, s := range map[string]string{
		"set-get":        "set a 1 0 3\r\nabc\r\nget a b\r\ngets a\r\n",
		"cas":            "cas a 0 0 1 99\r\nx\r\n",
		"incr":           "set n 0 0 1\r\n5\r\nincr n 18446744073709551615\r\ndecr n 9\r\n",
		"touch-gat":      "touch a 10\r\ngat -1 a\r\ngats 99999999999 a\r\n",
		"flush":          "flush_all 5 noreply\r\nflush_all\r\n",
		"noreply":        "set a 0 0 1 noreply\r\nx\r\ndelete a noreply\r\n",
		"misc":           "version\r\nverbosity 1\r\nstats\r\nquit\r\n",
		"bad-length":     "set a 0 0 -1\r\n",
		"bad-chunk":      "set a 0 0 1\r\nxyz\r\n",
		"no-newline":     "get " + strings.Repeat("k", 300),
		"append-prepend": "append a 0 0 1\r\nz\r\nprepend a 0 0 1\r\nz\r\n",
		"meta":           "ms a 3 T1 F2 c\r\nabc\r\nmg a v k O1 t s f c\r\nmd a q\r\nma n N0 J5 v\r\nme n\r\nmg YQ== b k\r\nmn\r\n",
		"meta-stale":     "ms s 1 T9\r\nx\r\nmd s I T5\r\nmg s v N5 R9 t h l\r\nms s 1 I C1\r\ny\r\nmg s u h l c\r\nmd s C1 q\r\nmg n N-1 R-5 v\r\n",
		"meta-write":     "ms w 1 MA N5 E9 s c\r\nx\r\nmd w x I T3 F1 E4\r\nma w t T9 N2 C4 E7 c v\r\nmg w u t T4 R9 N1 E3\r\nme w b\r\n",
	} {
		fuzzseed.Add(f, name, []byte(s))
	}
	d := fuzzDoor(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 0 && in[0] == binaryReq {
			return // FuzzBinary's
		}
		fuzzConn(d, in)
	})
}

func FuzzBinary(f *testing.F) {
	// Inputs are what follows the first magic byte, which the target adds.
	seed := func(name string, b []byte) { fuzzseed.Add(f, name, b[1:]) }
	seed("set-get", append(binRequest(opSet, make([]byte, 8), []byte("k"), []byte("v"), 0), binRequest(opGetK, nil, []byte("k"), nil, 0)...))
	seed("quiet", append(binRequest(opSetQ, make([]byte, 8), []byte("k"), []byte("v"), 7), binRequest(opNoop, nil, nil, nil, 0)...))
	seed("incr", binRequest(opIncr, make([]byte, 20), []byte("n"), nil, 0))
	seed("flush", binRequest(opFlush, []byte{0, 0, 0, 5}, nil, nil, 0))
	seed("sasl", binRequest(opSASLAuth, nil, []byte("PLAIN"), []byte("\x00u\x00p"), 0))
	seed("stat-version", append(binRequest(opStat, nil, nil, nil, 0), binRequest(opVersion, nil, nil, nil, 0)...))
	seed("bad-lengths", binHeader(opGet, 100, 3, 2))
	seed("short-header", []byte{binaryReq, 0, 0})
	seed("touch-gat", append(binRequest(opTouch, []byte{0, 0, 0, 1}, []byte("k"), nil, 0), binRequest(opGatKQ, []byte{0xff, 0xff, 0xff, 0xff}, []byte("k"), nil, 0)...))
	d := fuzzDoor(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzConn(d, append([]byte{binaryReq}, in...))
	})
}
