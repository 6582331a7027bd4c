package memcache

import (
	"fmt"
	"testing"
	"time"
)

// mg's serve-stale flags answer as memcached 1.6 (its t/metaget.t, "serve
// stale with mdelete"): md I marks the item stale with a new cas, the
// first mg wins the recache (X W), later ones see Z; an ms with I and an
// older cas stores but keeps the item stale and its TTL; a valid ms clears
// it all.
func TestMetaServeStale(t *testing.T) {
	b := newTestBackend(t, 2, false)
	d := startDoor(t, Config{}, b)
	c := dialDoor(t, d)
	c.send("set toinv 0 0 3\r\nmoo\r\nmg toinv s v\r\nmd toinv I T30\r\nmg toinv s t v\r\nmg toinv s t v\r\n")
	c.expect("STORED\r\nVA 3 s3\r\nmoo\r\nHD\r\nVA 3 s3 t30 X W\r\nmoo\r\nVA 3 s3 t30 Z X\r\nmoo\r\n")
	c.send("ms toinv 1 T90 C1\r\nf\r\nms toinv 1 I T90 C1\r\nf\r\nmg toinv s t v c\r\n")
	c.expect("EX\r\nHD\r\nVA 1 s1 t30 c")
	var cas uint64
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fscanf(c.nc, "%d Z X\r\nf\r\n", &cas); err != nil {
		t.Fatal(err)
	}
	c.send(fmt.Sprintf("ms toinv 1 T90 C%d\r\ng\r\nmg toinv s t v\r\n", cas))
	c.expect("HD\r\nVA 1 s1 t90\r\ng\r\n")
	// md C acts only on the item of that cas; md I on a miss is NF.
	c.send("md toinv C1\r\nmd toinv I\r\nmd none I\r\nmg toinv v k\r\nmd toinv q\r\nmg toinv v\r\n")
	c.expect("EX\r\nHD\r\nNF\r\nVA 1 ktoinv X W\r\ng\r\nEN\r\n")
}

// mg N creates an empty item on a miss and hands its creator the win
// token (W); R wins an item whose TTL left is under its token; others see
// Z until the item is written (memcached's t/metaget.t, "autovivify and
// bit-win").
func TestMetaRecache(t *testing.T) {
	b := newTestBackend(t, 2, false)
	d := startDoor(t, Config{}, b)
	c := dialDoor(t, d)
	// N before t: memcached reads the flags in order, and t before the N
	// that creates the item reports its TTL before N set it (-1).
	c.send("mg needwin s v N30 t\r\nmg needwin s t v N30\r\n")
	c.expect("VA 0 s0 t30 W\r\n\r\nVA 0 s0 t30 Z\r\n\r\n")
	c.send("ms needwin 2 T120\r\nmu\r\nmg needwin s t v N30\r\nmg needwin s t v N30 R130\r\nmg needwin t N30 R130\r\n")
	c.expect("HD\r\nVA 2 s2 t120\r\nmu\r\nVA 2 s2 t120 W\r\nmu\r\nHD t120 Z\r\n")
	c.send("ms needwin 4 T300\r\nzuuu\r\nmg needwin t R130\r\nmg nokey t R130\r\n")
	c.expect("HD\r\nHD t300\r\nEN\r\n")
	b.skew.Add(200) // 100 s left: under R130
	c.send("mg needwin t R130\r\nmg needwin t R130 q\r\nmg needwin t R130 k\r\n")
	c.expect("HD t100 W\r\nHD t100 Z\r\nHD t100 kneedwin Z\r\n")
}

// mg C sends no value while the item's cas is C's (memcached's t/metaget.t,
// "va_set"): HD then, VA once it changed; q hides neither.
func TestMetaGetIfChanged(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 1, false))
	c := dialDoor(t, d)
	c.send("ms va_set 2 c\r\nva\r\n")
	var cas uint64
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fscanf(c.nc, "HD c%d\r\n", &cas); err != nil {
		t.Fatal(err)
	}
	c.send(fmt.Sprintf("mg va_set C%d v c\r\nmg va_set C99999 v c\r\nmg va_set C%d v q\r\nmn\r\n", cas, cas))
	c.expect(fmt.Sprintf("HD c%d\r\nVA 2 c%d\r\nva\r\nHD\r\nMN\r\n", cas, cas))
}
