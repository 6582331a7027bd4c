package memcache

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// liveHeap is the heap's live bytes after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// heldBound is what the limiter lets a connection's value buffers hold.
func heldBound(d *Door) int64 {
	_, size := sizeClass(d.be.MaxValue() + 250 + 64)
	return RoundBytes + 2*int64(size)
}

// Every size gets a buffer of its class, at most a quarter larger.
func TestSizeClasses(t *testing.T) {
	last := -1
	for n := 1; n <= 1<<pooledMaxBits+10; n += 1 + n/97 {
		class, size := sizeClass(n)
		if size < n || class >= 0 && (size > n+n/4+1 || class < last || class >= nClasses) {
			t.Fatalf("%d bytes: class %d of %d bytes", n, class, size)
		}
		if class >= 0 {
			if c2, s2 := sizeClass(size); c2 != class || s2 != size {
				t.Fatalf("class %d's size %d is in class %d (%d)", class, size, c2, s2)
			}
			last = class
		}
	}
}

// bigValue stores key with a 60 KB value through c and returns the value.
func bigValue(c *client, key string) string {
	v := strings.Repeat("x", 60000)
	c.send(fmt.Sprintf("set %s 0 0 %d\r\n%s\r\n", key, len(v), v))
	c.expect("STORED\r\n")
	return v
}

// A get naming 30,000 keys that each hold 60 KB (1.8 GB of answers) makes
// the connection hold its stated bound at most, whether the client reads
// or not: the keys are run a round at a time, the values streamed. Before,
// every key's value was copied out before the first answer went out.
func TestLongGetHoldsItsBound(t *testing.T) {
	d := startDoor(t, Config{WriteTimeout: 30 * time.Second}, newTestBackend(t, 2, false))
	c := dialDoor(t, d)
	bigValue(c, "k")
	base := liveHeap()
	c.send("get" + strings.Repeat(" k", 30000) + "\r\n")
	// Take the first answers, then none: the door blocks writing.
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c.nc, make([]byte, 200<<10)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let it fill the socket's buffers
	grown := liveHeap() - base
	t.Logf("heap +%d KiB while blocked; peak held %d KiB (bound %d KiB, connection %d KiB)",
		grown>>10, d.peakHeld.Load()>>10, heldBound(d)>>10, d.ConnBound()>>10)
	if grown > d.ConnBound()+8<<20 {
		t.Errorf("the connection's get grew the heap by %d MiB, over its bound of %d MiB", grown>>20, d.ConnBound()>>20)
	}
	if p := d.peakHeld.Load(); p > heldBound(d) {
		t.Errorf("value buffers held %d bytes, over %d", p, heldBound(d))
	}
}

// The answers of a long get are whole and in order across its rounds:
// hits and misses of several partitions, 1,500 keys (three rounds), the
// values 60 KB each (streamed over many runs of a round).
func TestLongGetAnswersInOrder(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 3, false))
	c := dialDoor(t, d)
	vals := map[string]string{}
	for i := range 8 {
		k := fmt.Sprintf("big%d", i)
		vals[k] = strings.Repeat(string(rune('a'+i)), 60000)
		c.send(fmt.Sprintf("set %s %d 0 %d\r\n%s\r\n", k, i, len(vals[k]), vals[k]))
		c.expect("STORED\r\n")
	}
	var line, want strings.Builder
	line.WriteString("get")
	for i := range 1500 {
		k := fmt.Sprintf("big%d", i%8)
		if i%3 == 2 {
			k = fmt.Sprintf("miss%d", i)
		}
		line.WriteString(" " + k)
		if v, ok := vals[k]; ok {
			fmt.Fprintf(&want, "VALUE %s %d %d\r\n%s\r\n", k, i%8, len(v), v)
		}
	}
	want.WriteString("END\r\n")
	c.send(line.String() + "\r\nget big1\r\n")
	c.expect(want.String() + fmt.Sprintf("VALUE big1 1 60000\r\n%s\r\nEND\r\n", vals["big1"]))
	if p := d.peakHeld.Load(); p > heldBound(d) {
		t.Errorf("value buffers held %d bytes, over %d", p, heldBound(d))
	}
	// Answered, the connection keeps no buffer grown to a value.
	if n := d.held.Load(); n != 0 {
		t.Errorf("an idle connection holds %d bytes of grown buffers", n)
	}
	c.nc.Close()
	for deadline := time.Now().Add(5 * time.Second); d.curConns.Load() != 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := d.held.Load(); n != 0 {
		t.Errorf("closed connections still account %d bytes", n)
	}
}

// Connections that pipeline gets of 60 KB values and never read hold
// their bound each, not 512 commands × the value.
func TestPipelinedGetsNotReadHoldTheirBound(t *testing.T) {
	const conns = 20
	d := startDoor(t, Config{WriteTimeout: 30 * time.Second}, newTestBackend(t, 2, false))
	bigValue(dialDoor(t, d), "k")
	base := liveHeap()
	req := []byte(strings.Repeat("get k\r\n", 4096))
	var wg sync.WaitGroup
	for range conns {
		c := dialDoor(t, d)
		c.nc.(*net.TCPConn).SetReadBuffer(16 << 10)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.nc.SetWriteDeadline(time.Now().Add(3 * time.Second))
			c.nc.Write(req) // blocks once the door stops reading: fine
		}()
	}
	var worst int64
	for range 10 {
		time.Sleep(100 * time.Millisecond)
		worst = max(worst, liveHeap()-base)
	}
	wg.Wait()
	t.Logf("%d connections not reading: heap +%d MiB at most; peak held %d KiB (connection bound %d KiB)",
		conns, worst>>20, d.peakHeld.Load()>>10, d.ConnBound()>>10)
	if worst > conns*d.ConnBound()+8<<20 {
		t.Errorf("heap grew by %d MiB, over %d connections' bound of %d MiB", worst>>20, conns, conns*d.ConnBound()>>20)
	}
	if p := d.peakHeld.Load(); p > heldBound(d) {
		t.Errorf("value buffers held %d bytes, over %d", p, heldBound(d))
	}
}

// A pipeline of storage commands with 60 KB bodies is read a round of
// RoundBytes at a time, and every one is stored.
func TestPipelinedSetsHoldTheirBound(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 2, false))
	c := dialDoor(t, d)
	v := strings.Repeat("s", 60000)
	var req, want bytes.Buffer
	for i := range 100 {
		fmt.Fprintf(&req, "set s%d 0 0 %d\r\n%s\r\n", i%10, len(v), v)
		want.WriteString("STORED\r\n")
	}
	go func() { c.nc.Write(req.Bytes()) }()
	c.expect(want.String())
	c.send("get s3\r\n")
	c.expect("VALUE s3 0 60000\r\n" + v + "\r\nEND\r\n")
	if p := d.peakHeld.Load(); p > heldBound(d) {
		t.Errorf("value buffers held %d bytes, over %d", p, heldBound(d))
	}
}

// With IdleTimeout, a connection that sends nothing is closed, one that
// keeps sending is not.
func TestIdleTimeout(t *testing.T) {
	d := startDoor(t, Config{IdleTimeout: time.Second}, newTestBackend(t, 1, false))
	idle, busy := dialDoor(t, d), dialDoor(t, d)
	idle.send("version\r\n")
	idle.expect("VERSION " + Version + "\r\n")
	for range 25 { // 2.5 s, a request every 100 ms
		busy.send("get x\r\n")
		busy.expect("END\r\n")
		time.Sleep(100 * time.Millisecond)
	}
	if got := idle.closed(); len(got) != 0 {
		t.Fatalf("idle connection read %q", got)
	}
	if n := d.idleKicks.Load(); n != 1 {
		t.Fatalf("%d idle connections closed, want 1", n)
	}
	busy.send("get x\r\n")
	busy.expect("END\r\n")
}

// A failed SASL attempt is answered after authDelay, and maxAuthFails of
// them close the connection; the right token still works on another.
func TestSASLFailuresSlowAndClose(t *testing.T) {
	d := startDoor(t, Config{AuthToken: "s3cret"}, newTestBackend(t, 1, false))
	c := dialDoor(t, d)
	wrong := string(binRequest(opSASLAuth, nil, []byte("PLAIN"), []byte("\x00u\x00guess"), 0))
	for i := range maxAuthFails {
		start := time.Now()
		c.send(wrong)
		if st, _ := c.readPacket(); st != stAuthError {
			t.Fatalf("wrong password: status %#x", st)
		}
		if el := time.Since(start); el < authDelay {
			t.Fatalf("failure %d answered after %v, before %v", i+1, el, authDelay)
		}
	}
	if got := c.closed(); len(got) != 0 {
		t.Fatalf("after %d failures the connection read %q", maxAuthFails, got)
	}
	if n := d.authFails.Load(); n != maxAuthFails {
		t.Fatalf("auth_errors %d, want %d", n, maxAuthFails)
	}
	ok := dialDoor(t, d)
	ok.send(string(binRequest(opSASLAuth, nil, []byte("PLAIN"), []byte("\x00u\x00s3cret"), 0)))
	if st, _ := ok.readPacket(); st != stOK {
		t.Fatalf("right password: status %#x", st)
	}
}

// Connections that open, work and close are served one after another,
// their buffers reused (no 128 KiB each), and none is refused.
func TestChurnServed(t *testing.T) {
	d := startDoor(t, Config{MaxConns: 16}, newTestBackend(t, 1, false))
	for i := range 300 {
		nc, err := net.DialTimeout("tcp", d.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(nc, "set c%d 0 0 1\r\nx\r\nget c%d\r\nquit\r\n", i, i)
		b, _ := io.ReadAll(bufio.NewReader(nc))
		nc.Close()
		if want := fmt.Sprintf("STORED\r\nVALUE c%d 0 1\r\nx\r\nEND\r\n", i); string(b) != want {
			t.Fatalf("connection %d: %q, want %q", i, b, want)
		}
	}
	if n := d.refused.Load(); n != 0 {
		t.Fatalf("%d connections refused", n)
	}
}
