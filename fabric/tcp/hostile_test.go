package tcp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// grantOf is the key and address of the region c's acceptor granted.
func grantOf(c fabric.Conn) (key uint32, base uint64) {
	for k, r := range *c.(*conn).d.keys.Load() {
		key, base = k, r.base
	}
	return key, base
}

// txHeld is what c's tx holds: bytes copied into its buffer, bytes staged
// by reference, and responses not yet all sent.
func txHeld(c fabric.Conn) (copied, refs, unanswered int) {
	cc := c.(*conn)
	cc.txMu.Lock()
	defer cc.txMu.Unlock()
	return len(cc.tx.buf) - cc.tx.start, cc.tx.refBytes, cc.tx.unanswered()
}

// One 5 KiB write of whole-region READs, never read back, stages no copy
// of the region and no more answers than the peer's declared depth (16);
// the connection is dropped within about its send timeout.
func TestReadAmplification(t *testing.T) {
	const grant = 1 << 20
	send := 300 * time.Millisecond
	ln := listen(t, fabric.Options{SendTimeout: send})
	nc, c, _ := rawConn(t, ln, grant)
	key, base := grantOf(c)
	var in []byte
	for range 256 {
		in = append(in, req(frameRead, key, base, grant)...)
	}
	start := time.Now()
	if _, err := nc.Write(in); err != nil {
		t.Fatal(err)
	}
	maxCopied, maxUnanswered := 0, 0
	for deadline := time.Now().Add(10 * send); ; {
		copied, _, unanswered := txHeld(c)
		maxCopied, maxUnanswered = max(maxCopied, copied), max(maxUnanswered, unanswered)
		select {
		case <-c.Done():
		case <-time.After(time.Millisecond):
			if time.Now().Before(deadline) {
				continue
			}
			t.Fatalf("a peer that read none of its answers is still connected after %v", time.Since(start))
		}
		break
	}
	took := time.Since(start)
	t.Logf("dropped after %v; at most %d bytes copied, %d answers staged", took.Round(time.Millisecond), maxCopied, maxUnanswered)
	if maxCopied > 64<<10 {
		t.Errorf("%d bytes of READ data copied for the peer: want references, not copies", maxCopied)
	}
	if maxUnanswered > 16+1 {
		t.Errorf("%d answers staged for a peer of depth 16", maxUnanswered)
	}
	if err := c.Err(); !errors.Is(err, fabric.ErrPeerGone) || !strings.Contains(err.Error(), "stopped reading") {
		t.Errorf("Err = %v, want the send timeout", err)
	}
	if err := servesNew(t, ln); err != nil {
		t.Fatal("another connection after the attack:", err)
	}
}

// A peer that pipelines far past its declared depth is served in full
// when it reads its answers: the pause that holds its requests back ends
// as the answers go out (before, a pause with nothing sent was never
// resumed, nor timed out).
func TestPipelinePastDepthServed(t *testing.T) {
	ln := listen(t, fabric.Options{SendTimeout: time.Second})
	nc, c, r := rawConn(t, ln, 4096)
	copy(r.Bytes(), bytes.Repeat([]byte("0123456789abcdef"), 256))
	key, base := grantOf(c)
	const n, size = 8000, 64
	var in []byte
	for i := range n {
		in = append(in, req(frameRead, key, base+uint64(i%64)*size, size)...)
	}
	if _, err := nc.Write(in); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, n*(respSize+size))
	if k, err := io.ReadFull(nc, got); err != nil {
		t.Fatalf("%d of %d answers read: %v", k/(respSize+size), n, err)
	}
	for i := range n {
		a := got[i*(respSize+size):]
		if a[0] != frameResp || a[1] != statusOK || !bytes.Equal(a[respSize:respSize+size], r.Bytes()[(i%64)*size:][:size]) {
			t.Fatalf("answer %d is %q", i, a[:respSize+size])
		}
	}
	if c.Err() != nil {
		t.Fatal(c.Err())
	}
}

// READ data staged by reference is what the region held when the READ
// came in: a WRITE the peer sends after it into the same range does not
// change it.
func TestReadBeforeWrite(t *testing.T) {
	const grant = 1 << 20
	ln := listen(t, fabric.Options{SendTimeout: time.Minute})
	nc, c, r := rawConn(t, ln, grant)
	key, base := grantOf(c)
	old := bytes.Repeat([]byte{'a'}, grant)
	copy(r.Bytes(), old)
	// More READs than the socket buffers hold, so some are still staged
	// when the WRITE is applied.
	const reads = 40
	var in []byte
	for range reads {
		in = append(in, req(frameRead, key, base, grant)...)
	}
	in = append(in, req(frameWrite, key, base, 8192)...)
	in = append(in, bytes.Repeat([]byte{'b'}, 8192)...)
	go nc.Write(in)
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	a := make([]byte, respSize+grant)
	for i := range reads {
		if _, err := io.ReadFull(nc, a); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if a[0] != frameResp || a[1] != statusOK || !bytes.Equal(a[respSize:], old) {
			t.Fatalf("answer %d of a READ posted before the WRITE holds the WRITE's bytes", i)
		}
		if i == 0 {
			time.Sleep(50 * time.Millisecond) // the WRITE waits behind the answers
		}
	}
	if _, err := io.ReadFull(nc, a[:respSize]); err != nil || a[0] != frameResp || a[1] != statusOK {
		t.Fatalf("WRITE's ack %q: %v", a[:respSize], err)
	}
	if r.Bytes()[0] != 'b' {
		t.Fatal("WRITE not applied")
	}
}
