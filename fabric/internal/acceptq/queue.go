package acceptq

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/internal/fdhint"
)

// Config bounds a queue. Zero values take defaults.
type Config struct {
	// Prefix starts every error and log line ("fabric/tcp").
	Prefix string
	// MaxPending bounds the handshakes running at once (default 1024).
	MaxPending int
	// PerSource bounds those from one source (default 64); it applies
	// only when Source is set.
	PerSource int
	// MaxReady bounds the setups handshaken but not yet accepted
	// (default 128).
	MaxReady int
	// Timeout bounds one handshake, from accept to Accept's return
	// (default 5s).
	Timeout time.Duration
	// Source names the peer a socket comes from, for PerSource.
	Source func(net.Conn) string
	// ChurnRate and ChurnBurst pace a source whose connections keep
	// ending young having done no work (churn.go): past ChurnBurst of
	// such charges, decaying at ChurnRate a second, its handshakes start
	// at most ChurnRate a second. 0: no pacing.
	ChurnRate  float64
	ChurnBurst int
	// Logf receives rejections, rate-limited; nil drops them.
	Logf func(format string, args ...any)
	// Arrived, if set, reports whether a socket's hello has arrived
	// already, without waiting. The loop then runs that handshake itself
	// instead of in a goroutine of its own (starting one wakes a thread:
	// tens of microseconds on a small machine); the provider's Handshake
	// must then not wait for anything but the peer.
	Arrived func(net.Conn) bool
}

// Take, if set, is offered each handshaken setup on the goroutine that ran
// its handshake (the accept loop's, Config.Arrived, or its own), before it
// is queued for Accept; a setup it takes is its own. The thread that read
// the hello is awake and answers it: no hand-off to Accept's goroutine on
// the join's path. ctx bounds what it waits for (the handshake's timeout,
// and takeTimeout).
type Take[S any] func(ctx context.Context, s S) bool

// takeTimeout bounds a Take: it waits on nothing but a send to a socket
// it has just read, which does not block, so only a goroutine starved of
// CPU meets it, and then the deadline fails an honest join that was
// about to finish: a burst of 256 joins on 2 cores met 100 ms.
const takeTimeout = time.Second

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = "fabric"
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 1024
	}
	if c.PerSource <= 0 {
		c.PerSource = 64
	}
	if c.MaxReady <= 0 {
		c.MaxReady = 128
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	return c
}

// Handshake runs the acceptor's side of one socket's handshake. It owns
// c: on success the setup it returns does, on error acceptq closes c.
// ctx ends at the handshake's timeout, at eviction or at Close, and c's
// deadline follows it.
type Handshake[S any] func(ctx context.Context, c net.Conn) (S, error)

// Queue accepts sockets and hands out handshaken setups.
type Queue[S any] struct {
	cfg    Config
	ln     net.Listener
	hs     Handshake[S]
	reject func(S)
	take   Take[S]

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc
	ready  chan S
	wg     sync.WaitGroup

	mu       sync.Mutex
	pending  list.List             // *entry, oldest first
	bySource map[string]*list.List // *entry per source, oldest first
	churn    map[string]*churn     // sources whose connections ended young
	loopErr  error                 // why the accept loop stopped, if not Close

	log limiter

	closeOnce sync.Once
}

// entry is one running handshake.
type entry struct {
	source  string
	cancel  context.CancelFunc
	evicted bool
	all     *list.Element // in Queue.pending
	mine    *list.Element // in Queue.bySource[source]
}

// New starts accepting on ln. reject turns a handshaken setup away (the
// provider tells the dialer and frees it).
func New[S any](ln net.Listener, cfg Config, hs Handshake[S], reject func(S)) *Queue[S] {
	return NewTaking(ln, cfg, hs, reject, nil)
}

// NewTaking is New with a Take (nil: none).
func NewTaking[S any](ln net.Listener, cfg Config, hs Handshake[S], reject func(S), take Take[S]) *Queue[S] {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	q := &Queue[S]{
		cfg: cfg, ln: ln, hs: hs, reject: reject, take: take,
		ctx: ctx, cancel: cancel,
		ready:    make(chan S, cfg.MaxReady),
		bySource: map[string]*list.List{},
		churn:    map[string]*churn{},
		log:      limiter{logf: cfg.Logf, prefix: cfg.Prefix},
	}
	q.wg.Add(1)
	go q.acceptLoop()
	return q
}

// Addr is the listening socket's address.
func (q *Queue[S]) Addr() net.Addr { return q.ln.Addr() }

func temporary(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var se interface{ Temporary() bool }
	return errors.As(err, &se) && se.Temporary() // EMFILE, ENFILE, ECONNABORTED, ...
}

func (q *Queue[S]) acceptLoop() {
	defer q.wg.Done()
	var delay time.Duration
	for {
		c, err := q.ln.Accept()
		if err != nil {
			if q.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			if temporary(err) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				q.log.printf("accept", "accept: %v; retrying in %v", fdhint.Explain(err), delay)
				select {
				case <-time.After(delay):
				case <-q.ctx.Done():
					return
				}
				continue
			}
			q.mu.Lock()
			q.loopErr = err
			q.mu.Unlock()
			q.cancel()
			return
		}
		delay = 0
		ctx, e := q.admit(c)
		q.wg.Add(1)
		wait := q.pace(e.source)
		if wait == 0 && q.cfg.Arrived != nil && q.cfg.Arrived(c) {
			q.handshake(ctx, e, c, 0, true)
			continue
		}
		go q.handshake(ctx, e, c, wait, false)
	}
}

// admit registers c's handshake, evicting the oldest one past a cap.
func (q *Queue[S]) admit(c net.Conn) (context.Context, *entry) {
	src := ""
	if q.cfg.Source != nil {
		src = q.cfg.Source(c)
	}
	ctx, cancel := context.WithTimeout(q.ctx, q.cfg.Timeout)
	e := &entry{source: src, cancel: cancel}
	q.mu.Lock()
	defer q.mu.Unlock()
	mine := q.bySource[src]
	if mine == nil {
		mine = &list.List{}
		q.bySource[src] = mine
	}
	if q.cfg.Source != nil && mine.Len() >= q.cfg.PerSource {
		q.evict(mine.Front().Value.(*entry))
		q.log.printf("source", "%d handshakes pending from %s (at most %d): closed the oldest", q.cfg.PerSource, src, q.cfg.PerSource)
	} else if q.pending.Len() >= q.cfg.MaxPending {
		q.evict(q.pending.Front().Value.(*entry))
		q.log.printf("pending", "%d handshakes pending (at most %d): closed the oldest", q.cfg.MaxPending, q.cfg.MaxPending)
	}
	e.all = q.pending.PushBack(e)
	e.mine = mine.PushBack(e)
	return ctx, e
}

// evict ends e's handshake and forgets it; q.mu held.
func (q *Queue[S]) evict(e *entry) {
	e.evicted = true
	e.cancel()
	q.forget(e)
}

// forget drops e from the pending sets (once); q.mu held.
func (q *Queue[S]) forget(e *entry) {
	if e.all == nil {
		return
	}
	q.pending.Remove(e.all)
	mine := q.bySource[e.source]
	mine.Remove(e.mine)
	if mine.Len() == 0 {
		delete(q.bySource, e.source)
	}
	e.all, e.mine = nil, nil
}

// handshake runs c's handshake after wait (its churn pacing); inline, on
// the accept loop, it leaves the wait for room among the ready setups to
// a goroutine.
func (q *Queue[S]) handshake(ctx context.Context, e *entry, c net.Conn, wait time.Duration, inline bool) {
	done := true
	defer func() {
		if done {
			e.cancel()
			q.wg.Done()
		}
	}()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if d := wait; d > 0 {
		// A churning source: its handshake waits for its slot, within
		// the handshake's bound.
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	s, err := q.hs(ctx, c)
	expired := !stop()
	q.mu.Lock()
	q.forget(e)
	evicted := e.evicted
	q.mu.Unlock()
	if err != nil || expired {
		if err == nil {
			q.reject(s)
		} else {
			_ = c.Close()
		}
		if ctx.Err() != nil && q.ctx.Err() == nil && !evicted {
			q.log.printf("timeout", "handshake with %s not done within %v: closed", c.RemoteAddr(), q.cfg.Timeout)
		}
		return
	}
	// The setup now waits for Accept: from here the application decides
	// how long the dialer waits, within the handshake's bound.
	_ = c.SetDeadline(time.Time{})
	if q.take != nil {
		tctx, cancel := context.WithTimeout(ctx, takeTimeout)
		took := q.take(tctx, s)
		cancel()
		if took {
			return
		}
	}
	select {
	case q.ready <- s:
		return
	default:
	}
	if inline {
		done = false
		go func() {
			defer q.wg.Done()
			defer e.cancel()
			q.awaitRoom(ctx, c, s)
		}()
		return
	}
	q.awaitRoom(ctx, c, s)
}

// awaitRoom waits within ctx for room among the ready setups for s.
func (q *Queue[S]) awaitRoom(ctx context.Context, c net.Conn, s S) {
	select {
	case q.ready <- s:
	case <-ctx.Done():
		q.reject(s)
		if q.ctx.Err() == nil {
			q.log.printf("ready", "%d connections waiting for Accept (at most %d): rejected %s", q.cfg.MaxReady, q.cfg.MaxReady, c.RemoteAddr())
		}
	}
}

// Accept returns the next handshaken setup.
func (q *Queue[S]) Accept(ctx context.Context) (S, error) {
	var zero S
	if q.ctx.Err() != nil {
		return zero, q.stopped()
	}
	select {
	case s := <-q.ready:
		return s, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-q.ctx.Done():
		return zero, q.stopped()
	}
}

func (q *Queue[S]) stopped() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.loopErr != nil {
		return fmt.Errorf("%s: accept: %w", q.cfg.Prefix, q.loopErr)
	}
	return fabric.ErrClosed
}

// Pending reports the handshakes running now.
func (q *Queue[S]) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pending.Len()
}

// Close stops accepting, ends the handshakes and rejects the setups
// nobody accepted.
func (q *Queue[S]) Close() error {
	q.closeOnce.Do(func() {
		q.cancel()
		_ = q.ln.Close()
		q.wg.Wait()
		for {
			select {
			case s := <-q.ready:
				q.reject(s)
				continue
			default:
			}
			break
		}
	})
	return nil
}
