package shm

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jakiro-kv/jakiro/fabric"
)

// A socket watcher (its own, not the process's) ends a connection when
// its peer closes, not when the peer writes bytes (dropped); after its
// epoll set failed it hands the connections it held, and every later
// one, a goroutine of their own, which end them as well.
func TestSocketWatcher(t *testing.T) {
	var w sockWatch
	watched := func() (peer int, c *conn) {
		peer, uc := seqpacketPair(t)
		return peer, &conn{sock: uc, done: make(chan struct{})}
	}
	ends := func(c *conn, within time.Duration) bool {
		select {
		case <-c.Done():
			return errors.Is(c.Err(), fabric.ErrPeerGone)
		case <-time.After(within):
			return false
		}
	}

	peer, c := watched()
	if !w.add(c) {
		t.Fatal("the watcher did not take a connection")
	}
	if _, err := unix.Write(peer, []byte("junk")); err != nil {
		t.Fatal(err)
	}
	if ends(c, 50*time.Millisecond) {
		t.Fatal("a peer's bytes ended its connection")
	}
	unix.Shutdown(peer, unix.SHUT_RDWR) // EOF to c; the pair's cleanup closes it
	if !ends(c, 5*time.Second) {
		t.Fatal("the connection did not end within 5 s of its peer closing")
	}

	held, c1 := watched()
	if !w.add(c1) {
		t.Fatal("the watcher did not take a connection")
	}
	w.fail(errors.New("test"))
	later, c2 := watched()
	if w.add(c2) {
		t.Fatal("a failed watcher took a connection")
	}
	go c2.watch() // as newConn does when add says no
	unix.Shutdown(held, unix.SHUT_RDWR)
	unix.Shutdown(later, unix.SHUT_RDWR)
	if !ends(c1, 5*time.Second) || !ends(c2, 5*time.Second) {
		t.Fatal("after the watcher failed, connections did not end within 5 s of their peers closing")
	}
}
