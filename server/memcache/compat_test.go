package memcache

import (
	"bufio"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The door answers as memcached 1.6 does where clients and tools saw it
// differ (issue 42), one test per difference.

// A set too large for the cache deletes the key: a reader never gets a
// value older than the last write tried. add keeps it, as memcached.
func TestTooLargeSetDeletesTheKey(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 2, false))
	c := dialDoor(t, d)
	huge := strings.Repeat("h", d.be.MaxValue()+1)
	c.send("set sv 0 0 3\r\nMOO\r\nset kept 0 0 3\r\nOLD\r\n")
	c.expect("STORED\r\nSTORED\r\n")
	c.send(fmt.Sprintf("set sv 0 0 %d\r\n%s\r\nget sv\r\n", len(huge), huge))
	c.expect("SERVER_ERROR object too large for cache\r\nEND\r\n")
	c.send(fmt.Sprintf("add kept 0 0 %d\r\n%s\r\nget kept\r\n", len(huge), huge))
	c.expect("SERVER_ERROR object too large for cache\r\nVALUE kept 0 3\r\nOLD\r\nEND\r\n")
	c.send(fmt.Sprintf("set kept 0 0 %d noreply\r\n%s\r\nget kept\r\n", len(huge), huge))
	c.expect("END\r\n")
}

// A binary set too large answers status 0x03, its value is skipped and the
// connection goes on; the key is deleted (a set), kept (an add).
func TestBinaryTooLargeKeepsTheConnection(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 2, false))
	c := dialDoor(t, d)
	flags := make([]byte, 8)
	huge := make([]byte, d.be.MaxValue()+4096)
	for _, key := range []string{"a", "b"} {
		c.send(string(binRequest(opSet, flags, []byte(key), []byte("old"), 0)))
		if st, _ := c.readPacket(); st != stOK {
			t.Fatalf("set %s: status %#x", key, st)
		}
	}
	c.send(string(binRequest(opSetQ, flags, []byte("a"), huge, 0)) + string(binRequest(opAdd, flags, []byte("b"), huge, 0)))
	for _, what := range []string{"setq", "add"} {
		if st, body := c.readPacket(); st != stTooLarge {
			t.Fatalf("%s too large: status %#x %q, want 0x03", what, st, body)
		}
	}
	c.send(string(binRequest(opGet, nil, []byte("a"), nil, 0)))
	if st, _ := c.readPacket(); st != stNotFound {
		t.Fatalf("get after a too large set: status %#x, want not found", st)
	}
	c.send(string(binRequest(opGet, nil, []byte("b"), nil, 0)))
	if st, body := c.readPacket(); st != stOK || string(body[4:]) != "old" {
		t.Fatalf("get after a too large add: status %#x %q", st, body)
	}
	if n := d.badInput.Load(); n != 0 {
		t.Fatalf("%d connections closed for bad input", n)
	}
}

// A get line longer than the read buffer is read a key at a time: 2,000
// keys of 40 bytes (libmemcached's mget, ~80 KB) and 18,725 keys (~400 KB)
// are all answered; a key too long makes the line answer CLIENT_ERROR
// alone, as memcached (its t/issue_152.t), and the connection goes on.
func TestLongGetLines(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 3, false))
	c := dialDoor(t, d)
	key := func(i int) string { return fmt.Sprintf("%040d", i) }
	var set strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&set, "set %s %d 0 %d noreply\r\n%d\r\n", key(i), i, len(fmt.Sprint(i)), i)
	}
	c.send(set.String())
	for _, n := range []int{2000, 18725} {
		var line, want strings.Builder
		line.WriteString("get")
		for i := range n {
			line.WriteString(" " + key(i%2000))
			fmt.Fprintf(&want, "VALUE %s %d %d\r\n%d\r\n", key(i%2000), i%2000, len(fmt.Sprint(i%2000)), i%2000)
		}
		if line.Len() < 2*MaxLine && n == 18725 || line.Len() < MaxLine {
			t.Fatalf("a line of %d bytes is not longer than the buffer", line.Len())
		}
		go c.nc.Write([]byte(line.String() + "\r\n"))
		c.expect(want.String() + "END\r\n")
	}
	c.send("get " + key(1) + " " + strings.Repeat("x", 300) + " " + key(2) + "\r\nget " + key(3) + "\r\n")
	c.expect("CLIENT_ERROR bad command line format\r\nVALUE " + key(3) + " 3 1\r\n3\r\nEND\r\n")
}

// Malformed storage and delete lines are answered as memcached 1.6.18
// answers them (checked against it) and the connection goes on; an error
// respects noreply where memcached's does.
func TestMalformedLinesKeepTheConnection(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 2, false))
	for _, tc := range []struct{ in, want string }{
		{"cas foo 0 0 6 \r\nabcdef\r\n", "ERROR\r\nERROR\r\n"}, // the data line is no command either
		{"set k 0 0 -1\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"set k 0 0 4294967295\r\n", "CLIENT_ERROR bad command line format\r\n"}, // memcached's t/issue_70.t
		{"set k 0 0 2147483647\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"set k 0 0 abc\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"set k 0 0 -1 noreply\r\n", ""},
		{"set k 0 0\r\n", "ERROR\r\n"},
		{"set k 0 0 1 2 3\r\nx\r\n", "ERROR\r\nERROR\r\n"},
		{"set k 0 0 1 whatever\r\nx\r\n", "STORED\r\n"},
		{"delete k 10 noreply\r\n", ""},
		{"delete k 10\r\n", "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"},
		{"delete k 0 noreply\r\n", ""},
		{"delete k noreply\r\n", ""},
		{"delete a b c d\r\n", "ERROR\r\n"},
		{"incr k x noreply\r\n", ""},
		{"incr k\r\n", "ERROR\r\n"},
	} {
		c := dialDoor(t, d)
		c.send(tc.in + "version\r\n")
		c.expect(tc.want + "VERSION " + Version + "\r\n")
	}
	if n := d.badInput.Load(); n != 0 {
		t.Fatalf("%d connections closed for bad input", n)
	}
}

// The meta commands answer as memcached 1.6.18 answered the same lines
// (cas values aside): mg, ms, md, ma, me, mn with their flags, quiet
// mode, opaques, base64 keys and errors.
func TestMetaCommands(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 2, false))
	c := dialDoor(t, d)
	for _, tc := range []struct{ in, want string }{
		{"ms mk 2\r\nhi\r\n", "HD\r\n"},
		{"ms mk 2 T100 F5\r\nhi\r\n", "HD\r\n"},
		{"mg mk\r\n", "HD\r\n"},
		{"mg mk v\r\n", "VA 2\r\nhi\r\n"},
		{"mg mk s v t f k O123 q\r\n", "VA 2 s2 t100 f5 kmk O123\r\nhi\r\n"},
		{"mg nokey v\r\n", "EN\r\n"},
		{"mg nokey v q\r\nmn\r\n", "MN\r\n"},
		{"mg nokey k O9\r\n", "EN knokey O9\r\n"},
		{"ms mk 2 MA\r\nyo\r\nmg mk v\r\n", "HD\r\nVA 4\r\nhiyo\r\n"},
		{"ms nok 2 ME\r\nab\r\nms nok 2 ME\r\nab\r\n", "HD\r\nNS\r\n"},
		{"ms mk 2 C1\r\nxx\r\n", "EX\r\n"},
		{"ms mk 2 q\r\nxx\r\nmn\r\n", "MN\r\n"},
		{"md mk q\r\nmd mk\r\nmn\r\n", "NF\r\nMN\r\n"},
		{"md nok O5 k\r\n", "HD O5 knok\r\n"},
		{"ma cnt\r\n", "NF\r\n"},
		{"ma cnt N0 J10 v\r\n", "VA 2\r\n10\r\n"},
		{"ma cnt v\r\n", "VA 2\r\n11\r\n"},
		{"ma cnt MD D3 v\r\n", "VA 1\r\n8\r\n"},
		{"ma cnt MI D1 q\r\nmn\r\n", "MN\r\n"},
		{"ms str 3\r\nabc\r\nma str\r\n", "HD\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
		{"me nokey\r\n", "EN\r\n"},
		{"mn\r\n", "MN\r\n"},
		{"mg\r\n", "ERROR\r\n"},
		{"mg mk zz\r\n", "CLIENT_ERROR invalid flag\r\n"},
		{"mg mk v v\r\n", "CLIENT_ERROR duplicate flag\r\n"},
		{"mg mk Tabc\r\n", "CLIENT_ERROR bad token in command line format\r\n"},
		{"mg mk O" + strings.Repeat("x", 40) + "\r\n", "CLIENT_ERROR opaque token too long\r\n"},
		{"ms mk\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"ms mk abc\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"ms mk 2 MZ\r\nab\r\n", "CLIENT_ERROR invalid mode for ms M token\r\n"},
		{"ms mk 2 Fabc\r\nab\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"ms mk 2 T30\r\nab\r\nmg mk t v\r\nmg mk T60 t\r\n", "HD\r\nVA 2 t30\r\nab\r\nHD t60\r\n"},
		{"ma cnt D-1\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n"},
		{"mg " + strings.Repeat("k", 251) + " v\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"ms bWs= 2 b\r\nzz\r\nmg mk v\r\nmg bWs= b k v\r\n", "HD\r\nVA 2\r\nzz\r\nVA 2 kbWs= b\r\nzz\r\n"},
		{"ms mk 2 MR q\r\nab\r\nms gone 2 MR\r\nab\r\n", "NS\r\n"},
		{"mg mk E5 S1\r\n", "CLIENT_ERROR invalid flag\r\n"}, // E is known (metawrite_test.go), S is not
		// C0 matches no item (no cas is 0): EX, or NF without one.
		{"ms c0 1\r\nx\r\nms c0 1 C0\r\ny\r\nmd c0 C0\r\nms none 1 C0\r\nz\r\nmd none C0\r\nmg c0 v\r\n",
			"HD\r\nEX\r\nEX\r\nNF\r\nNF\r\nVA 1\r\nx\r\n"},
	} {
		c.send(tc.in)
		c.expect(tc.want)
	}
	// c returns the cas that gets and C compare with.
	c.send("ms ck 1 c\r\nx\r\n")
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var cas uint64
	if _, err := fmt.Fscanf(c.nc, "HD c%d\r\n", &cas); err != nil || cas == 0 {
		t.Fatalf("ms c: %v", err)
	}
	c.send(fmt.Sprintf("gets ck\r\nms ck 1 C%d\r\ny\r\nme ck\r\n", cas))
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	c.expect(fmt.Sprintf("VALUE ck 0 1 %d\r\nx\r\nEND\r\nHD\r\nME ck exp=-1 la=0 cas=", cas))
	var cas2 uint64
	if _, err := fmt.Fscanf(c.nc, "%d fetch=no size=1\r\n", &cas2); err != nil || cas2 == cas {
		t.Fatalf("me after ms C: cas %d (was %d): %v", cas2, cas, err)
	}
}

// Operators' commands answer as memcached 1.6.18 answered the same lines,
// with what is true of the door (memory fixed at start, no slabs).
func TestOperatorCommands(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 2, false)) // 16 MiB of memory
	c := dialDoor(t, d)
	for _, tc := range []struct{ in, want string }{
		{"verbosity\r\n", "ERROR\r\n"},
		{"verbosity x\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"verbosity 1 2 3\r\n", "ERROR\r\n"},
		{"verbosity 1 noreply\r\nmn\r\n", "MN\r\n"},
		{"verbosity 1\r\n", "OK\r\n"},
		{"slabs automove\r\n", "ERROR\r\n"},
		{"slabs automove 9\r\n", "ERROR\r\n"},
		{"slabs automove x\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"slabs automove 1\r\n", "OK\r\n"},
		{"flush_all -1\r\n", "OK\r\n"},
		{"flush_all x\r\n", "CLIENT_ERROR invalid exptime argument\r\n"},
		{"flush_all 0 0\r\n", "OK\r\n"},
		{"flush_all 0 0 0\r\n", "ERROR\r\n"},
		{"flush_all noreply\r\nmn\r\n", "MN\r\n"},
		{"cache_memlimit\r\n", "ERROR\r\n"},
		{"cache_memlimit x\r\n", "ERROR\r\n"},
		{"cache_memlimit 1\r\n", "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n"},
		{"cache_memlimit 100\r\n", "OK\r\n"},
		{"cache_memlimit 100 noreply\r\nmn\r\n", "MN\r\n"},
		{"stats cachedump\r\n", "CLIENT_ERROR bad command line\r\n"},
		{"stats cachedump x y\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"stats cachedump 1 10\r\n", "END\r\n"},
		{"stats nosuch\r\n", "ERROR\r\n"},
		{"stats detail\r\n", "CLIENT_ERROR usage: stats detail on|off|dump\r\n"},
		{"get nothing\r\nstats reset\r\n", "END\r\nRESET\r\n"},
		{"lru_crawler metadump\r\n", "ERROR\r\n"},
		{"stats settings\r\n", "STAT maxbytes 16777216\r\nSTAT maxconns 4096\r\nSTAT tcpport "},
	} {
		c.send(tc.in)
		c.expect(tc.want)
	}
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var rest strings.Builder
	buf := make([]byte, 4096)
	for !strings.HasSuffix(rest.String(), "END\r\n") {
		n, err := c.nc.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		rest.Write(buf[:n])
	}
	for _, want := range []string{"STAT item_size_max 65536\r\n", "STAT idle_timeout 0\r\n", "STAT num_threads 2\r\n", "STAT domain_socket NULL\r\n", "STAT evictions on\r\n"} {
		if !strings.Contains(rest.String(), want) {
			t.Errorf("stats settings: no %q in %q", want, rest.String())
		}
	}
}

// An HTTP request line closes the connection without an answer, as
// memcached does.
func TestHTTPRequestCloses(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 1, false))
	for _, req := range []string{"GET / HTTP/1.0\r\n\r\n", "POST /x HTTP/1.1\r\nHost: a\r\n\r\n"} {
		c := dialDoor(t, d)
		c.send(req)
		if got := c.closed(); len(got) != 0 {
			t.Fatalf("%q answered %q", req, got)
		}
	}
	c := dialDoor(t, d)
	c.send("get HTTP/1.0\r\nversion\r\n") // a key that looks like it is still a key
	c.expect("END\r\nVERSION " + Version + "\r\n")
}

// lru_crawler metadump lists every live key once, a chunk at a time over
// all partitions, then END; what follows it in the pipeline comes after.
func TestMetadump(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 3, false))
	c := dialDoor(t, d)
	want := map[string]string{}
	var set strings.Builder
	for i := range 3000 {
		k := fmt.Sprintf("key:%d/%s", i, strings.Repeat("x", i%200))
		v := strings.Repeat("v", i%50)
		fmt.Fprintf(&set, "set %s 0 0 %d noreply\r\n%s\r\n", k, len(v), v)
		enc := strings.NewReplacer(":", "%3A", "/", "%2F").Replace(k)
		want[enc] = fmt.Sprint(len(v))
	}
	c.send(set.String() + "delete key:7/" + strings.Repeat("x", 7) + " noreply\r\n")
	delete(want, "key%3A7%2F"+strings.Repeat("x", 7))
	c.send("lru_crawler metadump all\r\nversion\r\n")
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c.nc)
	seen := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "END\r\n" {
			break
		}
		var key, exp, la, cas, fetch, size string
		if n, _ := fmt.Sscanf(line, "key=%s exp=%s la=%s cas=%s fetch=%s size=%s\r\n", &key, &exp, &la, &cas, &fetch, &size); n != 6 || exp != "-1" ||
			la != fmt.Sprint(d.be.Now()) || fetch != "no" {
			t.Fatalf("line %q", line)
		}
		if want[key] != size {
			t.Fatalf("%s: size %s, want %q (listed twice or never stored)", key, size, want[key])
		}
		delete(want, key)
		seen++
	}
	if len(want) != 0 {
		t.Fatalf("%d keys not listed (%d listed)", len(want), seen)
	}
	if line, _ := r.ReadString('\n'); line != "VERSION "+Version+"\r\n" {
		t.Fatalf("after END: %q", line)
	}
}

// cache_memlimit bounds what the store's items take from then on, as
// memcached's: 200 values of 60 KB (12 MB) all stay in 16 MiB, at most
// 8 MiB of them under an 8 MiB limit, all again once it is raised.
func TestCacheMemlimit(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 2, false)) // 2 x 8 MiB
	c := dialDoor(t, d)
	v := strings.Repeat("m", 60000)
	kept := func() int {
		var set, get strings.Builder
		get.WriteString("get")
		for i := range 200 {
			fmt.Fprintf(&set, "set m%d 0 0 %d noreply\r\n%s\r\n", i, len(v), v)
			fmt.Fprintf(&get, " m%d", i)
		}
		c.send(set.String() + get.String() + "\r\n")
		c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(c.nc)
		n := 0
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if line == "END\r\n" {
				return n
			}
			if strings.HasPrefix(line, "VALUE ") {
				n++
			}
		}
	}
	if n := kept(); n != 200 {
		t.Fatalf("%d of 200 values kept before the limit", n)
	}
	c.send("cache_memlimit 8\r\n")
	c.expect("OK\r\n")
	if n := kept(); n > 8<<20/len(v) || n == 0 {
		t.Fatalf("%d values (%d bytes) kept under an 8 MiB limit", n, n*len(v))
	}
	c.send("cache_memlimit 1024\r\n")
	c.expect("OK\r\n")
	if n := kept(); n != 200 {
		t.Fatalf("%d of 200 values kept once the limit was raised", n)
	}
}

// stats reset starts the door's counters again, as memcached's.
func TestStatsReset(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 1, false))
	c := dialDoor(t, d)
	c.send("get a b\r\nstats reset\r\n")
	c.expect("END\r\nRESET\r\n")
	if n := d.cmdGet.Load(); n != 0 {
		t.Fatalf("cmd_get %d after stats reset", n)
	}
}

// A get line that stops arriving mid-way is a request under way, not an
// idle connection: it is closed after ReadTimeout.
func TestLongGetLineStalls(t *testing.T) {
	d := startDoor(t, Config{ReadTimeout: 300 * time.Millisecond}, newTestBackend(t, 1, false))
	c := dialDoor(t, d)
	c.send("get" + strings.Repeat(" k", 600)) // past a round, no end
	if got := c.closed(); string(got) != "" {
		t.Fatalf("answered %q", got)
	}
}

// stats cachedump 1 lists the items as memcached's (memcdump reads it),
// up to its limit; the other classes none.
func TestCachedump(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 2, false))
	c := dialDoor(t, d)
	c.send("set a 0 0 1\r\nx\r\nset bb 0 0 2\r\nxy\r\nset ccc 0 0 3\r\nxyz\r\n")
	c.expect("STORED\r\nSTORED\r\nSTORED\r\n")
	lines := func(req string) []string {
		c.send(req)
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		r := bufio.NewReader(c.nc)
		var got []string
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if line == "END\r\n" {
				return got
			}
			got = append(got, line)
		}
	}
	all := strings.Join(lines("stats cachedump 1 0\r\n"), "")
	for _, want := range []string{"ITEM a [1 b; 0 s]\r\n", "ITEM bb [2 b; 0 s]\r\n", "ITEM ccc [3 b; 0 s]\r\n"} {
		if !strings.Contains(all, want) {
			t.Errorf("cachedump: no %q in %q", want, all)
		}
	}
	if got := lines("stats cachedump 1 2\r\n"); len(got) != 2 {
		t.Errorf("cachedump limit 2: %q", got)
	}
	if got := lines("stats cachedump 2 0\r\n"); len(got) != 0 {
		t.Errorf("cachedump of class 2: %q", got)
	}
}
