package memcache

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

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
	// closed at once.
	MaxConns int
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
	// MaxLine is the longest ascii command line (a get of many keys).
	MaxLine = bufSize
	// maxRoundCmds bounds the commands of one round (pipelined requests
	// read before answering).
	maxRoundCmds = 512
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
	started                        time.Time
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
	return &Door{cfg: cfg, be: be, ln: ln, conns: map[net.Conn]struct{}{}, stop: make(chan struct{}), started: time.Now()}, nil
}

// Addr is the address the door listens on.
func (d *Door) Addr() string { return d.ln.Addr().String() }

// Serve accepts connections until ctx ends or Close, each served by its
// own goroutine on Go's netpoller (no thread per connection). It then
// closes the door and returns nil.
func (d *Door) Serve(ctx context.Context) error {
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
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			defer d.untrack(nc)
			newConn(d, nc).serve()
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
		d.logf("memcached: refused %s: %d connections already", nc.RemoteAddr(), len(d.conns))
		return false
	}
	d.conns[nc] = struct{}{}
	d.curConns.Add(1)
	d.totalConns.Add(1)
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
		{"jakiro_bad_input_closes", u(d.badInput.Load())},
		{"jakiro_slow_client_closes", u(d.slowClients.Load())},
	}
	return append(s, be...)
}
