package tcp

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// decoder is a conn with no socket (nothing is sent) whose initiator has
// four ops outstanding, for feeding the frame decoder by hand.
func decoder(t *testing.T) (*conn, *region) {
	d := newDomain(1 << 20)
	t.Cleanup(d.closeAll)
	pub, err := d.alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	r := d.local(pub)
	c := &conn{fd: -1, d: d, depth: 8, peerDepth: 8, ops: make([]pending, 8), mask: 7, done: make(chan struct{})}
	kinds := []fabric.OpKind{fabric.OpRead, fabric.OpWrite, fabric.OpRead, fabric.OpRead}
	for i, k := range kinds {
		r.acquire()
		c.ops[i] = pending{id: uint64(i), kind: k, local: r, loff: 64 * i, n: 16 * i}
	}
	c.tail.Store(uint64(len(kinds)))
	return c, r
}

type decoded struct {
	err  bool
	resp uint64
	tx   []byte
	mem  []byte
}

func decodeIn(t *testing.T, in []byte, pieces int) decoded {
	c, r := decoder(t)
	// Half the READs and WRITEs aim at the real region, to get past the
	// key. Only where bytes 4-7 are the first frame's key: region keys are
	// random, so rewriting any other bytes would make the whole and split
	// runs decode different frames.
	if len(in) >= reqSize && (in[0] == frameRead || in[0] == frameWrite) && in[3]&1 == 1 {
		in = bytes.Clone(in)
		in[4], in[5], in[6], in[7] = byte(r.key), byte(r.key>>8), byte(r.key>>16), byte(r.key>>24)
	}
	var err error
	for len(in) > 0 && err == nil {
		k := max(1, len(in)/pieces)
		err = c.decode(in[:k])
		in = in[k:]
	}
	return decoded{err: err != nil, resp: c.resp.Load(), tx: c.tx.buf[c.tx.start:], mem: bytes.Clone(r.mem)}
}

// FuzzDecode feeds arbitrary bytes to the frame decoder, whole and in
// pieces: it must not panic, must not complete more ops than were posted,
// and must reach the same state however the bytes were split.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{frameResp, statusOK}, uint8(3))
	f.Add(append(req(frameWrite, 1, 4096, 4), 1, 2, 3, 4), uint8(2))
	f.Add(req(frameRead, 1, 4096, 8), uint8(7))
	f.Add(req(frameRing, 3, 0, 0), uint8(1))
	f.Add([]byte{frameResp, 9}, uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, pieces uint8) {
		whole := decodeIn(t, in, 1)
		split := decodeIn(t, in, int(pieces%16)+1)
		if whole.resp > 4 {
			t.Fatalf("%d ops completed, 4 posted", whole.resp)
		}
		if whole.err != split.err || whole.resp != split.resp || !bytes.Equal(whole.tx, split.tx) || !bytes.Equal(whole.mem, split.mem) {
			t.Fatalf("decoding whole and in %d pieces differ: %+v vs %+v", pieces%16+1, whole, split)
		}
	})
}

// bufConn is a net.Conn that reads in and discards what is written.
type bufConn struct {
	net.Conn
	r io.Reader
}

func (c bufConn) Read(p []byte) (int, error)         { return c.r.Read(p) }
func (c bufConn) Write(p []byte) (int, error)        { return len(p), nil }
func (c bufConn) RemoteAddr() net.Addr               { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (c bufConn) SetDeadline(time.Time) error        { return nil }
func (c bufConn) SetWriteDeadline(t time.Time) error { return nil }

// FuzzHello feeds arbitrary bytes to the acceptor's hello reader.
func FuzzHello(f *testing.F) {
	f.Add(putHS(nil, kindHello, 16, []byte("data")))
	f.Add(putHS(nil, kindHello, 16, nil)[:5])
	f.Add(putHS(nil, kindAccept, 16, nil))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		data, depth, err := readHello(bufConn{r: bytes.NewReader(in)})
		if err != nil {
			return
		}
		if len(data) > fabric.MaxDialData || depth < 0 || len(in) < hsSize+len(data) {
			t.Fatalf("hello accepted with %d bytes of data, depth %d, from %d bytes", len(data), depth, len(in))
		}
	})
}

// FuzzReply feeds arbitrary bytes to the dialer's reader of the
// acceptor's answer.
func FuzzReply(f *testing.F) {
	f.Add(putHS(nil, kindAccept, 16, make([]byte, 20)))
	f.Add(putHS(nil, kindReject, 0, nil))
	f.Add(putHS(nil, kindBadHello, 0, []byte("why")))
	f.Add([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		reply, _, err := readReply(bufConn{r: bytes.NewReader(in)})
		if err != nil {
			if errors.Is(err, fabric.ErrRejected) && len(in) >= hsSize && in[10] != kindReject {
				t.Fatalf("reply %q read as a rejection: %v", in, err)
			}
			return
		}
		if len(reply) > fabric.MaxAcceptData || len(in) < hsSize+len(reply) {
			t.Fatalf("accepted %d bytes of data from %d", len(reply), len(in))
		}
	})
}
