package memcache

import (
	"strings"
	"testing"
	"time"
)

// The read deadline is set only when a round waits for its rest
// (boundedReader): an idle connection stays open, a round that does not
// complete within ReadTimeout closes it, and every round gets a whole
// ReadTimeout however long the connection has been served.
func TestReadBounds(t *testing.T) {
	const rt = 300 * time.Millisecond
	d := startDoor(t, Config{ReadTimeout: rt}, newTestBackend(t, 2, false))

	idle := dialDoor(t, d)
	time.Sleep(3 * rt)
	idle.send("version\r\n")
	idle.expect("VERSION " + Version + "\r\n")

	// Rounds whose rest comes rt/3 after their first byte, for 2 rt.
	slowRounds := dialDoor(t, d)
	for i := 0; i < 6; i++ {
		slowRounds.send("set k 0 0 3\r\n")
		time.Sleep(rt / 3)
		slowRounds.send("abc\r\n")
		slowRounds.expect("STORED\r\n")
	}

	for _, partial := range []string{"get k", "set k 0 0 10\r\nabc", string(binRequest(opGetK, nil, []byte("k"), nil, 0)[:10])} {
		c := dialDoor(t, d)
		start := time.Now()
		c.send(partial)
		if b := c.closed(); len(b) != 0 {
			t.Errorf("%q: answered %q", partial, b)
		}
		if el := time.Since(start); el < rt*9/10 {
			t.Errorf("%q: closed after %v, before ReadTimeout %v", strings.TrimSpace(partial), el, rt)
		}
	}
}
