package memcache

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/jakiro-kv/jakiro/kv"
	"github.com/jakiro-kv/jakiro/rfp"
)

// Backend is what the door needs of a server: its partitions, and a way to
// run commands on a partition's goroutine.
type Backend interface {
	Partitions() int
	PartitionOf(hash uint64) int
	// Enqueue hands b to partition p's goroutine, which runs every Cmd
	// (Exec) and then calls b.Group.Done. It returns false, running
	// nothing, once the server is stopping.
	Enqueue(p int, b *Batch) bool
	// Stopped is closed when the server stops.
	Stopped() <-chan struct{}
	// Now is the store's clock, Unix seconds.
	Now() uint32
	// MaxValue is the largest value the store takes.
	MaxValue() int
	// Stats are the store's counters as memcached names them.
	Stats() []Stat
}

// Stat is one line of the stats command.
type Stat struct{ Name, Value string }

// Config is the door's configuration.
type Config struct {
	// Addr is the TCP address to listen on, host:port.
	Addr string
	// AuthToken, if set, is the password every client must give through
	// binary SASL PLAIN (any user name) before any other command; the
	// ascii protocol, which has no authentication, is then refused.
	AuthToken string
	// Insecure lets a non-loopback Addr go without AuthToken.
	Insecure bool
	// ReadTimeout bounds the rest of a round of commands once its first
	// byte arrived; WriteTimeout bounds writing its answers (a client
	// that does not read them is disconnected). Defaults 5 s each.
	ReadTimeout, WriteTimeout time.Duration
	// RunTimeout bounds the wait for the partitions (default 10 s).
	RunTimeout time.Duration
	// MaxConns bounds the connections at once (default 4096); more are
	// closed at once (and logged).
	MaxConns int
	// IdleTimeout, if set, closes a connection that sent nothing for
	// this long. Off by default, as memcached's idle_timeout: its clients
	// keep pooled connections open for long, and an idle connection costs
	// the door a goroutine and no buffer; MaxConns bounds how many there
	// are. Set it where untrusted clients may hold connections to keep
	// others out.
	IdleTimeout time.Duration
	// Spin is how long a connection polls its socket after a round before
	// it waits in the netpoller (spin.go): 0 is DefaultSpin, negative
	// never.
	Spin time.Duration
	// Logf logs refusals and errors, rate-limited by the caller; nil: none.
	Logf func(format string, args ...any)
}

// Defaults and limits.
const (
	defaultTimeout    = 5 * time.Second
	defaultRunTimeout = 10 * time.Second
	defaultMaxConns   = 4096
	// bufSize is each connection's read and write buffer; an ascii command
	// line must fit in it (MaxLine).
	bufSize = 64 << 10
	// MaxLine is the longest ascii command line but a get's (get, gets,
	// gat, gats), which is read a key at a time, of any length.
	MaxLine = bufSize
	// maxRoundCmds bounds the commands of one round (pipelined requests,
	// a get line's keys, read before answering).
	maxRoundCmds = 512
	// RoundBytes bounds what a connection's value buffers hold beyond
	// their base: the values its gets copied out and the bodies of its
	// storage commands, until answered. A round stops reading requests
	// once past it, and a get that would take it past is run after the
	// answers before it are written (streamed). The first command of each
	// run may pass it by one value, and a round's last request by one
	// body (each in a buffer of its size class, bufpool.go), so a
	// connection holds at most
	//
	//	2*bufSize + maxRoundCmds*(outBase+sizeof(Cmd)+sizeof(request)+48) + RoundBytes + 2*class(MaxValue)
	//
	// (ConnBound), whatever the keys in a line, the sizes of the values
	// or whether the client reads its answers.
	RoundBytes = 1 << 20
	// outBase is each command's value buffer to begin with; keepOut the
	// size up to which a grown one is kept once answered (larger ones go
	// back to the collector).
	outBase = 512
	keepOut = 4 << 10
	// authDelay holds the answer to a failed SASL authentication, and
	// maxAuthFails of them close the connection: a guesser gets a few
	// tries a second per connection, a client that knows the token waits
	// for nothing.
	authDelay    = 250 * time.Millisecond
	maxAuthFails = 3
	// Version is what the version command answers.
	Version = "1.6.0-jakiro"
)

// Door is a memcached-protocol listener (ascii and binary) served by a
// Backend's partitions.
type Door struct {
	cfg   Config
	be    Backend
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	stop  chan struct{}
	once  sync.Once

	curConns, totalConns           atomic.Int64
	cmdGet, cmdSet, cmdTouch       atomic.Uint64
	getHits, getMisses, cmdFlush   atomic.Uint64
	badInput, slowClients, timeout atomic.Uint64
	idleKicks, authFails, refused  atomic.Uint64
	peakHeld                       atomic.Int64 // the highest limiter.held of any connection
	held                           atomic.Int64 // limiter.held of all connections now
	started                        time.Time

	spin             spinner
	readers, writers sync.Pool // connections' bufio buffers
	bufs             bufPool   // commands' grown value buffers
}

// ConnBound is the most memory a connection holds, in bytes (RoundBytes).
func (d *Door) ConnBound() int64 {
	_, maxBuf := sizeClass(d.be.MaxValue() + kv.MaxKeyLen + 64) // a binary body: extras, key, value
	// Per command: its Cmd and base Out; per request (as many at most):
	// its entry and a meta command's return flags.
	perCmd := outBase + int64(unsafe.Sizeof(Cmd{})) + int64(unsafe.Sizeof(request{})) + maxOpaque + 16
	return 2*bufSize + maxRoundCmds*perCmd + RoundBytes + 2*int64(maxBuf)
}

// Listen checks the configuration (protected mode as the RFP listener:
// no token beyond loopback is refused unless Insecure) and listens.
func Listen(cfg Config, be Backend) (*Door, error) {
	if err := rfp.CheckListen("tcp://"+cfg.Addr, cfg.AuthToken != "", cfg.Insecure); err != nil {
		return nil, fmt.Errorf("memcached: %w", err)
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = defaultTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = defaultTimeout
	}
	if cfg.RunTimeout <= 0 {
		cfg.RunTimeout = defaultRunTimeout
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = defaultMaxConns
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("memcached: %w", err)
	}
	return newDoor(cfg, be, ln), nil
}

func newDoor(cfg Config, be Backend, ln net.Listener) *Door {
	if cfg.Spin == 0 {
		cfg.Spin = DefaultSpin
	}
	d := &Door{cfg: cfg, be: be, ln: ln, conns: map[net.Conn]struct{}{}, stop: make(chan struct{}), started: time.Now()}
	d.spin.dur = int64(max(cfg.Spin, 0))
	d.spin.epoch.Store(1) // a new connection (epoch 0) spins once the netpoller woke it
	d.spin.watch = -1
	if p, ok := be.(interface{ Polling() bool }); ok {
		d.spin.polling = p.Polling
	}
	d.readers.New = func() any { return bufio.NewReaderSize(nil, bufSize) }
	d.writers.New = func() any { return bufio.NewWriterSize(nil, bufSize) }
	return d
}

// Addr is the address the door listens on.
func (d *Door) Addr() string { return d.ln.Addr().String() }

// Serve accepts connections until ctx ends or Close, each served by its
// own goroutine on Go's netpoller (no thread per connection). It then
// closes the door and returns nil.
func (d *Door) Serve(ctx context.Context) error {
	if d.spin.dur > 0 {
		d.spin.openWatch(d.ln)
	}
	stopCtx := context.AfterFunc(ctx, func() { d.Close() })
	defer stopCtx()
	for {
		nc, err := d.ln.Accept()
		if err != nil {
			select {
			case <-d.stop:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			d.logf("memcached: accept: %v", err)
			time.Sleep(10 * time.Millisecond) // EMFILE and the like: do not spin
			continue
		}
		if !d.track(nc) {
			nc.Close()
			continue
		}
		go func() {
			defer d.wg.Done()
			defer d.untrack(nc)
			c := newConn(d, nc)
			c.serve()
			c.end()
		}()
	}
}

func (d *Door) track(nc net.Conn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case <-d.stop:
		return false
	default:
	}
	if len(d.conns) >= d.cfg.MaxConns {
		d.refused.Add(1)
		d.logf("memcached: refused %s: %d connections already", nc.RemoteAddr(), len(d.conns))
		return false
	}
	d.conns[nc] = struct{}{}
	d.curConns.Add(1)
	d.totalConns.Add(1)
	// Under mu, after the stop check: Close takes mu before it waits, so
	// no Add can follow its Wait (the race detector holds a WaitGroup to
	// that).
	d.wg.Add(1)
	return true
}

func (d *Door) untrack(nc net.Conn) {
	nc.Close()
	d.mu.Lock()
	delete(d.conns, nc)
	d.mu.Unlock()
	d.curConns.Add(-1)
}

// Close stops accepting, closes every connection and waits for their
// goroutines (each ends within its timeouts at worst).
func (d *Door) Close() error {
	d.once.Do(func() {
		close(d.stop)
		d.ln.Close()
		d.mu.Lock()
		for nc := range d.conns {
			nc.Close()
		}
		d.mu.Unlock()
	})
	d.wg.Wait()
	d.spin.closeWatch()
	return nil
}

func (d *Door) logf(format string, args ...any) {
	if d.cfg.Logf != nil {
		d.cfg.Logf(format, args...)
	}
}

// stats are the door's own counters beside the Backend's.
func (d *Door) stats(be []Stat) []Stat {
	u := func(v uint64) string { return fmt.Sprint(v) }
	s := []Stat{
		{"pid", fmt.Sprint(pid())},
		{"uptime", fmt.Sprint(int64(time.Since(d.started).Seconds()))},
		{"time", fmt.Sprint(d.be.Now())},
		{"version", Version},
		{"pointer_size", "64"},
		{"curr_connections", fmt.Sprint(d.curConns.Load())},
		{"total_connections", fmt.Sprint(d.totalConns.Load())},
		{"cmd_get", u(d.cmdGet.Load())},
		{"cmd_set", u(d.cmdSet.Load())},
		{"cmd_flush", u(d.cmdFlush.Load())},
		{"cmd_touch", u(d.cmdTouch.Load())},
		{"get_hits", u(d.getHits.Load())},
		{"get_misses", u(d.getMisses.Load())},
		{"threads", fmt.Sprint(d.be.Partitions())},
		{"rejected_connections", u(d.refused.Load())},
		{"idle_kicks", u(d.idleKicks.Load())},
		{"auth_errors", u(d.authFails.Load())},
		{"jakiro_buffered_bytes", fmt.Sprint(d.held.Load())},
		{"jakiro_bad_input_closes", u(d.badInput.Load())},
		{"jakiro_slow_client_closes", u(d.slowClients.Load())},
	}
	return append(s, be...)
}
