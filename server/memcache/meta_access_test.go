package memcache

import (
	"fmt"
	"testing"
)

// mg h answers whether the item had been fetched before this mg, as
// memcached 1.6: every read fetches it (get, touch, the binary get, mg),
// u and me read without fetching, a write makes a new item, not fetched.
func TestMetaHitBefore(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 2, false))
	c := dialDoor(t, d)
	for _, tc := range []struct{ in, want string }{
		{"ms hk 2\r\nab\r\nmg hk h v\r\nmg hk h\r\n", "HD\r\nVA 2 h0\r\nab\r\nHD h1\r\n"},
		{"ms hk 2\r\ncd\r\nmg hk h k O7\r\n", "HD\r\nHD h0 khk O7\r\n"}, // a write: a new item
		{"ms hu 1\r\nx\r\nmg hu h u\r\nmg hu h\r\nmg hu h\r\n", "HD\r\nHD h0\r\nHD h0\r\nHD h1\r\n"},
		{"ms he 1\r\nx\r\nmg he h u\r\nmg he h\r\n", "HD\r\nHD h0\r\nHD h0\r\n"},
		{"ms hg 1\r\nx\r\nget hg\r\nmg hg h\r\n", "HD\r\nVALUE hg 0 1\r\nx\r\nEND\r\nHD h1\r\n"},
		{"ms ht 1\r\nx\r\ntouch ht 0\r\nmg ht h\r\n", "HD\r\nTOUCHED\r\nHD h1\r\n"},
		{"ms hq 1\r\nx\r\nmg hq h q\r\nmg hq h q v\r\nmn\r\n", "HD\r\nHD h0\r\nVA 1 h1\r\nx\r\nMN\r\n"}, // q hides EN only
		{"mg nokey h\r\n", "EN\r\n"},
	} {
		c.send(tc.in)
		c.expect(tc.want)
	}
	// me reads without fetching, and says whether the item was fetched.
	c.send("ms hm 1\r\nx\r\nme hm\r\nmg hm h\r\nme hm\r\n")
	c.expect("HD\r\nME hm exp=-1 la=0 cas=")
	var cas uint64
	if _, err := fmt.Fscanf(c.nc, "%d fetch=no size=1\r\n", &cas); err != nil {
		t.Fatal(err)
	}
	c.expect(fmt.Sprintf("HD h0\r\nME hm exp=-1 la=0 cas=%d fetch=yes size=1\r\n", cas))
	// The binary protocol's get fetches too.
	c.send("ms hb 1\r\nx\r\n")
	c.expect("HD\r\n")
	c.send(string(binRequest(opGet, nil, []byte("hb"), nil, 0)))
	if st, _ := c.readPacket(); st != stOK {
		t.Fatalf("binary get: status %#x", st)
	}
	c.send("mg hb h\r\n")
	c.expect("HD h1\r\n")
}

// mg l answers the seconds since the item was last accessed, written or
// read, before this mg, as memcached 1.6; u and me leave the time as it
// was.
func TestMetaLastAccess(t *testing.T) {
	b := newTestBackend(t, 2, false)
	d := startDoor(t, Config{}, b)
	c := dialDoor(t, d)
	c.send("ms lk 1 T100\r\nx\r\n")
	c.expect("HD\r\n")
	for _, tc := range []struct {
		later    uint32 // seconds that pass first
		in, want string
	}{
		{5, "mg lk l\r\nmg lk l t\r\n", "HD l5\r\nHD l0 t95\r\n"},
		{3, "mg lk l u v\r\nmg lk h l u\r\nme lk\r\n", "VA 1 l3\r\nx\r\nHD h1 l3\r\nME lk exp=92 la=3 cas="},
		{0, "mg lk l\r\nmg lk l\r\n", "HD l3\r\nHD l0\r\n"},
		{7, "touch lk 100\r\nmg lk l\r\n", "TOUCHED\r\nHD l0\r\n"},
		{2, "gat 50 lk\r\nmg lk l t\r\n", "VALUE lk 0 1\r\nx\r\nEND\r\nHD l0 t50\r\n"},
		{4, "set lk 0 0 1\r\ny\r\nmg lk l h\r\n", "STORED\r\nHD l0 h0\r\n"}, // a write is an access
		{9, "mg lk l v O1 k\r\n", "VA 1 l9 O1 klk\r\ny\r\n"},
	} {
		b.skew.Add(tc.later)
		c.send(tc.in)
		c.expect(tc.want)
		if tc.want[len(tc.want)-1] != '\n' { // me: the rest of its line
			var cas uint64
			if _, err := fmt.Fscanf(c.nc, "%d fetch=yes size=1\r\n", &cas); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A store without access times (kv.Config.AccessTimes off) answers h, and
// an mg asking for l with an error rather than a made-up time.
func TestMetaLastAccessNotKept(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackendTimes(t, 1, false, false))
	c := dialDoor(t, d)
	c.send("ms k 1\r\nx\r\nmg k h\r\nmg k l v\r\nmg k h q\r\nmn\r\n")
	c.expect("HD\r\nHD h0\r\nCLIENT_ERROR last access times not kept (kv.Config.AccessTimes)\r\nHD h1\r\nMN\r\n")
	c.send("me k\r\n")
	c.expect("ME k exp=-1 cas=")
}
