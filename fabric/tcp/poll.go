package tcp

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jakiro-kv/jakiro/fabric/internal/parkfd"
)

// The provider's netpoller: a fixed set of goroutines, each blocked in
// epoll_wait(2) on its own epoll instance, serve every established
// connection's socket events, so the threads do not grow with the
// connections. Why not Go's netpoller: applications busy-poll Poll on
// every P (a Gosched loop), and a P only runs the netpoller when it runs
// out of goroutines, so a ready socket would wait for sysmon (up to
// 10 ms). A thread returning from epoll_wait instead gets back in through
// the global run queue at the next Gosched of any spinner.
//
// Yet a poller does not block in epoll_wait itself: a thread in a system
// call holds its P, and the runtime's sysmon, finding no P idle, takes it
// back (handoffp) and then wakes every 20 µs for a millisecond more. A
// loop of tcp joins kept sysmon at 20 µs for good: 11-13% of the client's
// CPU and of the server's (2 cores). So a poller that finds nothing
// parks in the runtime's poller on its epoll instance (readable while it
// holds events) and is woken by whichever thread runs netpoll: the idle
// P's (a server keeps one, Config.SpareProcs), by a P out of work, or at
// the latest by the rearm tick's deadline while drivers spin (drive.go).
// At GOMAXPROCS 1 the poller blocks in epoll_wait as before.

// poller is one epoll instance and the goroutine that waits on it.
type poller struct {
	epfd  int
	ep    *os.File        // epfd's file (it owns epfd)
	rc    syscall.RawConn // ep's, in the runtime's poller; nil: block in epoll_wait
	timed bool            // ep has a read deadline set
	// wait's try (look): its events and what epoll_wait said
	events []unix.EpollEvent
	n      int
	err    error
	lookFn func(uintptr) bool
	rxbuf  []byte // the rx buffer of this poller's goroutine

	mu    sync.RWMutex
	conns map[uint64]*conn
	// quiet are the connections whose input events are off because a
	// driver reads them (drive.go), checked every rearmTick.
	quiet []*conn // under mu
}

var (
	pollersOnce sync.Once
	pollers     []*poller
	pollersErr  error
	nextPoller  atomic.Uint32
	nextToken   atomic.Uint64
	pollersMade atomic.Int32 // len(pollers), once made
)

// numPollers: one per two Ps, at least one, at most eight.
func numPollers() int { return max(1, min(runtime.GOMAXPROCS(0)/2, 8)) }

// pollerFor picks a poller for a new connection, round robin.
func pollerFor() (*poller, error) {
	pollersOnce.Do(func() {
		for range numPollers() {
			fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
			if err != nil {
				pollersErr = fmt.Errorf("fabric/tcp: epoll_create: %w", err)
				return
			}
			p := &poller{epfd: fd, rxbuf: make([]byte, rxBufSize), conns: map[uint64]*conn{}}
			p.ep, p.rc = parkfd.Open(fd, "fabric/tcp epoll") // the file owns fd
			p.lookFn = p.look
			pollers = append(pollers, p)
			go p.loop()
		}
		pollersMade.Store(int32(len(pollers)))
	})
	if pollersErr != nil {
		return nil, pollersErr
	}
	return pollers[int(nextPoller.Add(1))%len(pollers)], nil
}

// add registers c's socket, edge-triggered for input: the connection
// reads until the socket is empty. Room to send is asked for only once a
// send leaves bytes staged (wantWritable): registered from the start, a
// writable socket raises an event at once, and the poller's thread would
// be woken at every join (and every rearm) to find nothing to do.
func (p *poller) add(c *conn) error {
	c.token = nextToken.Add(1)
	p.mu.Lock()
	p.conns[c.token] = c
	p.mu.Unlock()
	ev := c.event(true)
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
		p.mu.Lock()
		delete(p.conns, c.token)
		p.mu.Unlock()
		return fmt.Errorf("fabric/tcp: epoll_ctl: %w", err)
	}
	return nil
}

// remove stops c's events; an event already taken may still be served,
// which the connection's locks and dead flag make harmless.
func (p *poller) remove(c *conn) {
	_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
	p.mu.Lock()
	delete(p.conns, c.token)
	p.mu.Unlock()
}

// event is c's registration: input events on or off, and room-to-send
// events once asked for (outOn).
func (c *conn) event(input bool) unix.EpollEvent {
	ev := unix.EpollEvent{
		Events: unix.EPOLLRDHUP | unix.EPOLLET,
		Fd:     int32(uint32(c.token)),
		Pad:    int32(uint32(c.token >> 32)),
	}
	if input {
		ev.Events |= unix.EPOLLIN
	}
	if c.outOn.Load() {
		ev.Events |= unix.EPOLLOUT
	}
	return ev
}

// wantWritable turns c's room-to-send events on, for good: a send left
// bytes staged. The modification raises an event if there is room by
// now, so none is lost between the short send and this call.
func (c *conn) wantWritable() {
	if c.outOn.Load() {
		return
	}
	c.armMu.Lock()
	if !c.outOn.Load() && !c.dead.Load() && c.fd >= 0 {
		c.outOn.Store(true)
		ev := c.event(!c.quiet.Load())
		_ = unix.EpollCtl(c.p.epfd, unix.EPOLL_CTL_MOD, c.fd, &ev)
	}
	c.armMu.Unlock()
}

func (p *poller) loop() {
	events := make([]unix.EpollEvent, 256)
	// again: connections whose read ran out of budget with bytes maybe
	// left; edge-triggered, they raise no new event for those, so they
	// are read again after the events of this round, round robin: one
	// busy connection cannot hold the others' events back.
	var again, next []*conn
	for {
		timeout := -1
		p.mu.RLock()
		quiet := len(p.quiet) > 0
		p.mu.RUnlock()
		if quiet {
			timeout = rearmTickMS
		}
		if len(again) > 0 {
			timeout = 0
		}
		n, err := p.wait(events, timeout)
		if quiet {
			p.rearmUndriven()
		}
		if err != nil {
			n = 0 // EINTR
		}
		for i := range events[:n] {
			ev := &events[i]
			token := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			p.mu.RLock()
			c := p.conns[token]
			p.mu.RUnlock()
			if c == nil {
				continue
			}
			if ev.Events&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
				c.onWritable()
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
				if c.kickReadBudget(p.rxbuf, ev.Events&(unix.EPOLLRDHUP|unix.EPOLLERR|unix.EPOLLHUP) != 0, rxBudget) {
					next = append(next, c)
				}
				if c.driven() {
					p.quieten(c)
				}
			}
		}
		for i, c := range again {
			if !c.dead.Load() && c.kickReadBudget(p.rxbuf, true, rxBudget) {
				next = append(next, c)
			}
			again[i] = nil
		}
		again, next = next, again[:0]
	}
}

// wait is epoll_wait(2) on p's instance with a timeout in milliseconds
// (-1: none), parked in the runtime's poller rather than blocked in the
// system call. A timeout reports no events.
func (p *poller) wait(events []unix.EpollEvent, timeoutMS int) (int, error) {
	if p.rc == nil || runtime.GOMAXPROCS(0) == 1 {
		// With one P, a spinner that holds it keeps netpoll from running
		// but for sysmon's, 10 ms apart (a loop of joins at GOMAXPROCS 1
		// had steps of 10 ms): the thread returning from epoll_wait gets
		// in at the spinner's next Gosched instead.
		return unix.EpollWait(p.epfd, events, timeoutMS)
	}
	if timeoutMS == 0 {
		return unix.EpollWait(p.epfd, events, 0)
	}
	// Read tries look before it parks: no epoll_wait of our own first.
	if timeoutMS > 0 {
		p.timed = true
		_ = p.ep.SetReadDeadline(time.Now().Add(time.Duration(timeoutMS) * time.Millisecond))
	} else if p.timed {
		p.timed = false
		_ = p.ep.SetReadDeadline(time.Time{})
	}
	p.events = events
	rerr := p.rc.Read(p.lookFn)
	p.events = nil
	if rerr != nil {
		return 0, nil // the deadline: a tick with nothing to do
	}
	return p.n, p.err
}

// look is wait's try, made once (a closure per wait would be allocated):
// done when there are events or an error other than EINTR.
func (p *poller) look(fd uintptr) bool {
	p.n, p.err = unix.EpollWait(int(fd), p.events, 0)
	return p.n > 0 || p.err != nil && p.err != unix.EINTR
}
