package shm

import (
	"io"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/internal/eventbell"
)

// conn is an established shm connection. Post does the copies itself, so
// a completion is ready as soon as its op is posted; the ring only keeps
// them for Poll, in posting order.
type conn struct {
	d        *domain
	peer     []byte // the peer's domain, mapped; untrusted contents
	peerData []byte
	sock     socket
	bells    *eventbell.Remote // the acceptor's doorbells (dialer side)
	set      *eventbell.Set    // acceptor side: the listener's bells, source names this dialer's rings
	source   int

	// mu is held shared by Post while it touches the mappings, and
	// exclusively by Close to unmap them.
	mu    sync.RWMutex
	state atomic.Int32 // stateOpen, stateClosed or stateGone; first wins

	done      chan struct{}
	doneOnce  sync.Once
	after     fabric.AfterList // AfterDone's, started when done closes
	closeOnce sync.Once

	// A dialer's Close leaves the unmapping to watch, which its closing
	// of the socket wakes anyway (see Close).
	dialer      bool
	closing     atomic.Bool // Close has run: unmap when watch ends
	watchEnded  atomic.Bool
	releaseOnce sync.Once
	releaseErr  error

	// Completion ring, touched only by the Post/Poll goroutine. Entries
	// hold no pointers (errors become codes) so filling them costs no
	// write barriers.
	ring       []completion
	mask       uint64
	head, tail uint64
	depth      uint64
}

const (
	stateOpen = iota
	stateClosed
	stateGone
)

type completion struct {
	id   uint64
	kind fabric.OpKind
	err  uint8 // index in completionErrs: an op completes with a remote access error or none
}

// completionErrs are the errors an op can complete with, by
// completion.err.
var completionErrs = [...]error{nil, fabric.ErrRemoteAccess, errOutsideMapping}

func completionErr(err error) uint8 {
	switch err {
	case nil:
		return 0
	case errOutsideMapping:
		return 2
	}
	return 1
}

// socket is a connection's socket once established: the acceptor's, in
// the runtime's poller; the dialer's, a blocking descriptor outside it
// (dialSock).
type socket interface {
	syscall.Conn
	io.Reader
	io.Closer
}

func newConn(d *domain, peer, peerData []byte, sock socket, o fabric.Options, bells *eventbell.Remote, dialer bool) *conn {
	n := 1
	for n < o.QueueDepth {
		n <<= 1
	}
	d.handOff()
	c := &conn{
		d:        d,
		peer:     peer,
		peerData: peerData,
		sock:     sock,
		bells:    bells,
		source:   -1,
		done:     make(chan struct{}),
		ring:     make([]completion, n),
		mask:     uint64(n - 1),
		depth:    uint64(o.QueueDepth),
		dialer:   dialer,
	}
	if !sockets.add(c) {
		go c.watch()
	}
	return c
}

// The socket carries nothing after the handshake: EOF or an error means
// the peer closed or died, or Close shut the socket down. Its watcher
// (the process's, watch.go, or a goroutine of the connection's own)
// closes it: Close does not wait for that (closing a socket a goroutine
// reads waits until that goroutine has woken and let go of it).

// watch blocks reading the socket until it ends.
func (c *conn) watch() {
	var b [64]byte
	for {
		if _, err := c.sock.Read(b[:]); err != nil {
			break
		}
	}
	c.watchEnd()
}

// watchEnd: the socket ended. The dialer's Close left the unmapping to
// here, if it ran.
func (c *conn) watchEnd() {
	c.sock.Close()
	c.state.CompareAndSwap(stateOpen, stateGone)
	c.end()
	c.watchEnded.Store(true)
	if c.closing.Load() {
		c.release()
	}
}

func stateErr(s int32) error {
	switch s {
	case stateClosed:
		return fabric.ErrClosed
	case stateGone:
		return fabric.ErrPeerGone
	}
	return nil
}

func (c *conn) Alloc(size int) (*fabric.Region, error) {
	if s := c.state.Load(); s != stateOpen {
		return nil, stateErr(s)
	}
	return c.d.alloc(size)
}

func (c *conn) PeerData() []byte { return c.peerData }

func (c *conn) Post(ops []fabric.Op) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if s := c.state.Load(); s != stateOpen {
		return stateErr(s)
	}
	if uint64(len(ops)) > c.depth-(c.tail-c.head) {
		return fabric.ErrQueueFull
	}
	// Check the whole batch first: on error nothing is posted. Batches
	// mostly use one region, so ownership is checked once per region run.
	var owned *fabric.Region
	for i := range ops {
		op := &ops[i]
		own := op.Local != nil && (op.Local == owned || c.d.owns(op.Local))
		if err := fabric.CheckOp(i, op, own); err != nil {
			return err
		}
		owned = op.Local
	}
	for i := range ops {
		op := &ops[i]
		rem, err := lookup(c.peer, op.Remote, op.RemoteOff, op.Len)
		c.ring[c.tail&c.mask] = completion{id: op.ID, kind: op.Kind, err: completionErr(err)}
		c.tail++
		if err == nil {
			loc := op.Local.Bytes()[op.LocalOff : op.LocalOff+op.Len]
			if op.Kind == fabric.OpRead {
				copy(loc, rem)
			} else {
				copy(rem, loc)
			}
		}
	}
	return nil
}

// Poll touches the completion ring alone, never the mappings: it takes
// no lock (a driver polls at every turn of its loop).
func (c *conn) Poll(cs []fabric.Completion) (int, error) {
	if s := c.state.Load(); s != stateOpen {
		return 0, stateErr(s)
	}
	n := 0
	for n < len(cs) && c.head != c.tail {
		e := &c.ring[c.head&c.mask]
		cs[n] = fabric.Completion{ID: e.id, Kind: e.kind, Err: completionErrs[e.err]}
		c.head++
		n++
	}
	return n, nil
}

func (c *conn) Done() <-chan struct{} { return c.done }

// end closes done and starts the AfterDone functions, once.
func (c *conn) end() {
	c.doneOnce.Do(func() {
		close(c.done)
		c.after.End()
	})
}

// AfterDone implements fabric.DoneNotifier.
func (c *conn) AfterDone(f func()) (stop func() bool) { return c.after.Add(f) }

func (c *conn) Err() error {
	select {
	case <-c.done:
		return stateErr(c.state.Load())
	default:
		return nil
	}
}

// Close tells the peer (it reads EOF: the socket is shut down, and closed
// by watch, which that wakes), then unmaps both domains once no Post or
// Poll is inside them. On the dialer's side the unmapping is left to
// watch too: a client that reads one value and leaves does not wait for
// its munmaps (tens of microseconds with their TLB shootdowns), and they
// are done within microseconds after. The acceptor unmaps before Close
// returns.
func (c *conn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.state.CompareAndSwap(stateOpen, stateClosed)
		c.shutdown()
		c.end()
		if !c.dialer {
			err = c.release()
			return
		}
		// Whichever of Close and watch comes second releases: each sets
		// its flag before it reads the other's.
		c.closing.Store(true)
		if c.watchEnded.Load() {
			err = c.release()
		}
	})
	return err
}

// shutdown shuts the socket down both ways: the peer reads EOF, and so
// does watch. Nothing here waits for watch.
func (c *conn) shutdown() {
	rc, err := c.sock.SyscallConn()
	if err != nil {
		return // watch closed it: the peer is gone already
	}
	rc.Control(func(fd uintptr) { unix.Shutdown(int(fd), unix.SHUT_RDWR) })
}

// release unmaps both domains and frees the bells, once.
func (c *conn) release() error {
	c.releaseOnce.Do(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		err := unix.Munmap(c.peer)
		c.peer = nil
		c.bells.Close()
		c.bells = nil
		c.set.FreeSource(c.source)
		if derr := c.d.close(); err == nil {
			err = derr
		}
		c.releaseErr = err
	})
	return c.releaseErr
}

// RingBell implements fabric.Ringer: a memory add while the acceptor's
// partition is awake, and a write to its eventfd when it is blocked in
// WaitBell, so it wakes at once.
func (c *conn) RingBell(i int) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if s := c.state.Load(); s != stateOpen {
		return stateErr(s)
	}
	return c.bells.Ring(i)
}

// BellBlocked implements fabric.BellWatcher.
func (c *conn) BellBlocked(i int) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.state.Load() == stateOpen && c.bells.Blocked(i)
}

// BellSource implements fabric.RingSource (acceptor side).
func (c *conn) BellSource() int { return c.source }
