package memcache

import (
	"fmt"
	"strings"
	"testing"
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
