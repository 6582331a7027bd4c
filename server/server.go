package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/kv"
	"github.com/jakiro-kv/jakiro/rfp"
)

// Server is a running Jakiro server.
type Server struct {
	cfg   Config
	ln    *rfp.Listener
	store *kv.Store
	parts []*partition
	epoch time.Time
	churn *rateLog // connects, disconnects and refusals
	// stuckWait is how long Close waits for the partitions
	// (stuckPartitionWait; tests of Close's ordering wait longer).
	stuckWait time.Duration

	mu    sync.Mutex
	peers map[uint32]*peer
	list  atomic.Pointer[[]*peer] // what partitions scan
	gen   atomic.Uint64           // bumped after every list change

	stop      chan struct{}
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup // partitions
	watchers  sync.WaitGroup // one per peer: its watch, until it ran or was stopped
	bg        sync.WaitGroup // the reaper
	reap      chan *peer     // ended peers, for the reaper
	clients   atomic.Int64
	procs     *procs // the process's Ps (Config.DoorProcs)
}

// churnBurst bounds the connection log lines a second.
const churnBurst = 20

// New builds the store, listens and starts the partition goroutines.
// Serve then accepts clients.
func New(cfg Config) (*Server, error) {
	s, err := build(cfg)
	if err != nil {
		return nil, err
	}
	for _, p := range s.parts {
		s.wg.Add(1)
		go p.run()
	}
	s.bg.Add(1)
	go s.reaper()
	s.procs.start()
	return s, nil
}

// build is New without starting the partitions.
func build(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	store, err := kv.New(cfg.kvConfig())
	if err != nil {
		return nil, err
	}
	var sp atomic.Pointer[Server]
	fo := cfg.Fabric
	fo.OnHello = func() {
		if s := sp.Load(); s != nil {
			s.wakeAsleep()
		}
	}
	ln, err := rfp.Listen(cfg.Listen, rfp.ListenConfig{
		Partitions: cfg.Partitions, Slots: cfg.Slots, MaxValue: cfg.MaxValue, MaxClients: cfg.MaxClients,
		ReqRing: cfg.ReqRing, RespRing: cfg.RespRing,
		ReplyTimeout: cfg.ReplyTimeout, Fabric: fo, AuthToken: cfg.AuthToken})
	if err != nil {
		store.Close()
		return nil, err
	}
	if cfg.SpareProcs {
		spareProcs(cfg.Partitions + ln.SyscallWaiters())
	}
	s := &Server{cfg: cfg, ln: ln, store: store, epoch: time.Now(), churn: newRateLog(cfg.Logf, churnBurst), stuckWait: stuckPartitionWait,
		peers: map[uint32]*peer{}, stop: make(chan struct{}), reap: make(chan *peer, reapBatch), procs: newProcs(cfg.DoorProcs, cfg.Partitions)}
	empty := []*peer{}
	s.list.Store(&empty)
	defer sp.Store(s)
	for i := 0; i < cfg.Partitions; i++ {
		s.parts = append(s.parts, &partition{id: i, srv: s, kv: store.Partition(i), countsRings: ln.CountsRings(),
			val:          make([]byte, cfg.MaxValue+rfp.MetaLen+rfp.IncrResultLen),
			namesRingers: ln.CountsRings() && ln.NamesRingers() && !cfg.IdlePoll})
	}
	return s, nil
}

// Addr is the URL clients dial.
func (s *Server) Addr() string { return s.ln.Addr() }

// Clients is the number of connected clients.
func (s *Server) Clients() int { return int(s.clients.Load()) }

// JoinPool reports the listener's pool of connections prepared before
// anyone dials (Config.JoinPool).
func (s *Server) JoinPool() fabric.ReadyStats { return s.ln.ReadyStats() }

// Partitions is the number of partitions.
func (s *Server) Partitions() int { return len(s.parts) }

func (s *Server) now() int64 { return int64(time.Since(s.epoch)) }

// Serve accepts clients until ctx ends or Close; it then closes the server
// (when ctx ended) and returns nil.
func (s *Server) Serve(ctx context.Context) error {
	// Clients whose handshake the fabric runs on its accept loop are
	// added there (no thread woken on their way in); the rest come here.
	s.ln.Handle(s.add, s.refused)
	defer s.ln.Handle(nil, nil)
	for {
		sess, err := s.ln.Accept(ctx)
		if err != nil {
			var he *rfp.HandshakeError
			if errors.As(err, &he) {
				s.refused(err)
				continue
			}
			select {
			case <-s.stop:
				return nil
			default:
			}
			if ctx.Err() != nil {
				s.Close()
				return nil
			}
			if errors.Is(err, fabric.ErrClosed) {
				return nil
			}
			return fmt.Errorf("server: accept: %w", err)
		}
		s.add(sess)
	}
}

func (s *Server) refused(err error) { s.churn.printf("jakiro: refused a client: %v", err) }

func (s *Server) add(sess *rfp.Session) {
	c := newPeer(sess, len(s.parts))
	s.mu.Lock()
	select {
	case <-s.stop:
		// Closing: shutdown may have closed the peers already.
		s.mu.Unlock()
		sess.Close()
		return
	default:
	}
	s.procs.connected() // before any partition can see c: it may spin for it
	s.peers[sess.ID] = c
	// The peer is watched by a function its connection starts when it
	// ends, not by a goroutine of its own: a join starts none.
	s.watchers.Add(1)
	c.unwatch = sess.AfterDone(func() { s.watch(c) })
	c.onFail = func() {
		if c.stopWatch() {
			go s.watch(c)
		}
	}
	s.publishLocked()
	s.mu.Unlock()
	s.clients.Add(1)
	s.churn.printf("jakiro: client %d connected", sess.ID)
	// A new client rings before its first request (rfp/bells.go), but it
	// may ring before it is published here: a partition that woke for
	// that ring, did not know the ringer and went back to sleep would
	// find the request only at the client's reminder (rfp.RingAfter,
	// 1 ms: the p99 of a join's first GET). So a partition asleep is
	// woken now that it can see the client (and one falling asleep sees
	// the new generation, partition.run); its wake-up then overlaps the
	// rest of the client's join. An awake partition needs nothing.
	for _, p := range s.parts {
		if p.seen.Load() == asleep {
			s.ln.RingBell(p.id)
		}
	}
}

// wakeAsleep rings the partitions asleep on their bells: a client is
// joining, and its first request should find them awake.
func (s *Server) wakeAsleep() {
	for _, p := range s.parts {
		if p.seen.Load() == asleep {
			s.ln.RingBell(p.id)
		}
	}
}

// watch hands c to the reaper once its connection ended or the server
// gave it up (it runs once per peer: started by the connection's end, or
// by fail having stopped that).
func (s *Server) watch(c *peer) {
	defer s.watchers.Done()
	select {
	case <-s.stop:
		return // shutdown closes every client at once
	default:
	}
	select {
	case <-c.failed:
		s.cfg.Logf("jakiro: client %d disconnected: %v", c.sess.ID, c.failErr)
	default:
		s.churn.printf("jakiro: client %d gone: %v", c.sess.ID, c.sess.Err())
	}
	select {
	case s.reap <- c:
	case <-s.stop:
	}
}

func (s *Server) publishLocked() {
	l := make([]*peer, 0, len(s.peers))
	for _, x := range s.peers {
		l = append(l, x)
	}
	s.list.Store(&l)
	s.gen.Add(1)
}

// reapBatch bounds the clients the reaper removes at once.
const reapBatch = 4096

// reaper removes ended clients in batches: it unpublishes a batch (one new
// list however many), waits until no partition goroutine can still be
// touching them, then closes their connections and frees their rings. A
// thousand clients leaving at once cost one list and one wait, not a
// thousand of each.
func (s *Server) reaper() {
	defer s.bg.Done()
	batch := make([]*peer, 0, reapBatch)
	for {
		select {
		case c := <-s.reap:
			batch = append(batch[:0], c)
		case <-s.stop:
			return
		}
	more:
		for len(batch) < reapBatch {
			select {
			case c := <-s.reap:
				batch = append(batch, c)
			default:
				break more
			}
		}
		s.remove(batch)
		clear(batch)
	}
}

// remove unpublishes peers, waits until no partition goroutine can still
// be touching them, then closes their connections and frees their rings.
func (s *Server) remove(batch []*peer) {
	s.mu.Lock()
	n := 0
	for _, c := range batch {
		if s.peers[c.sess.ID] == c {
			delete(s.peers, c.sess.ID)
			c.gone.Store(true)
			batch[n] = c
			n++
		}
	}
	batch = batch[:n]
	if n == 0 {
		s.mu.Unlock()
		return
	}
	s.publishLocked()
	gen := s.gen.Load()
	s.mu.Unlock()
	for _, p := range s.parts {
		// A partition moves past the list it scanned at its next control
		// pass (microseconds), or is blocked on its bell (asleep) and
		// reloads the list before touching any peer.
		for p.seen.Load() < gen && !p.stopped.Load() {
			time.Sleep(50 * time.Microsecond)
		}
	}
	for _, c := range batch {
		if c.stopWatch() { // failed: its watch need not start at this Close
			s.watchers.Done()
		}
		c.sess.Close()
	}
	s.clients.Add(-int64(n))
	s.procs.gone(n)
}

// Close stops accepting, disconnects every client, stops the partitions
// and frees the store; every goroutine the server started has ended when
// it returns. It is safe to call more than once, and concurrently.
func (s *Server) Close() error {
	// Serve (when its context ends) and the caller may both close: once,
	// and every caller returns after the shutdown is complete.
	s.closeOnce.Do(func() { s.closeErr = s.shutdown() })
	return s.closeErr
}

func (s *Server) shutdown() error {
	// Connections give the answers they owe their clients this long in
	// all, whatever the clients do: SIGTERM ends the server within 2 s.
	drainBy := time.Now().Add(shutdownDrain)
	s.mu.Lock()
	close(s.stop) // under mu: add publishes nothing after this
	s.mu.Unlock()
	s.procs.close()
	for p := range s.parts {
		s.ln.RingBell(p) // wake partitions blocked on their doorbells
	}
	stopped := waitFor(&s.wg, s.stuckWait)
	err := s.ln.Close() // after the partitions: it frees their doorbells
	if !stopped {
		// A partition is inside a fabric call that does not return (a
		// provider's Post blocked on a peer): its peers' memory and the
		// store must outlive it, so they are left to the process's exit.
		s.cfg.Logf("jakiro: a partition is stuck in a fabric call for %v; not freeing clients and store", s.stuckWait)
		return errors.New("server: a partition did not stop; clients and store not freed")
	}
	s.mu.Lock()
	for _, c := range s.peers {
		if c.stopWatch() {
			s.watchers.Done()
		}
	}
	s.mu.Unlock()
	s.watchers.Wait()
	s.bg.Wait()
	s.closePeers(drainBy)
	s.store.Close()
	return err
}

// closePeers closes every client still connected, a few at a time: with
// thousands connected, one by one (and republishing the list after each)
// would hold a SIGTERM for seconds. Their connections stop waiting on
// slow clients at drainBy, all together.
func (s *Server) closePeers(drainBy time.Time) {
	s.mu.Lock()
	peers := make([]*peer, 0, len(s.peers))
	for _, c := range s.peers {
		peers = append(peers, c)
	}
	s.peers = map[uint32]*peer{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for w := 0; w < closers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(peers); i += closers {
				peers[i].sess.CloseBy(drainBy)
				s.clients.Add(-1)
			}
		}()
	}
	wg.Wait()
}

// closers close clients in parallel at shutdown.
const closers = 4

// shutdownDrain bounds, from SIGTERM, how long the connections closed at
// shutdown wait for their clients to take what they are owed.
const shutdownDrain = time.Second

// stuckPartitionWait bounds how long Close waits for the partitions: they
// stop within a pass unless a fabric call holds one.
const stuckPartitionWait = time.Second

// waitFor waits for wg at most d and reports whether it finished.
func waitFor(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
