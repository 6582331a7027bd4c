package tcp

import (
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
	"golang.org/x/sys/unix"
)

// An accepted socket carries every option of sockOpts, which only its
// listener's socket was given; a dialer's too.
func TestAcceptedSocketOptions(t *testing.T) {
	ln := listen(t, fabric.Options{})
	d, a := pairOn(t, ln)
	defer d.Close()
	defer a.Close()
	for _, side := range []struct {
		name string
		c    fabric.Conn
	}{{"dialer", d}, {"acceptor", a}} {
		fd := side.c.(*conn).fd
		for _, o := range sockOpts {
			v, err := unix.GetsockoptInt(fd, o.level, o.opt)
			if err != nil {
				t.Fatalf("%s: %s: %v", side.name, o.name, err)
			}
			if v != o.v {
				t.Errorf("%s: %s is %d, want %d", side.name, o.name, v, o.v)
			}
		}
	}
}
