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

	mu       sync.Mutex
	sessions map[uint32]*rfp.Session
	list     atomic.Pointer[[]*rfp.Session] // what partitions scan
	gen      atomic.Uint64                  // bumped after every list change

	stop      chan struct{}
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup
	clients   atomic.Int64
}

// New builds the store, listens and starts the partition goroutines.
// Serve then accepts clients.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	store, err := kv.New(cfg.kvConfig())
	if err != nil {
		return nil, err
	}
	ln, err := rfp.Listen(cfg.Listen, rfp.ListenConfig{
		Partitions: cfg.Partitions, Slots: cfg.Slots, MaxValue: cfg.MaxValue, Fabric: cfg.Fabric})
	if err != nil {
		store.Close()
		return nil, err
	}
	s := &Server{cfg: cfg, ln: ln, store: store, epoch: time.Now(),
		sessions: map[uint32]*rfp.Session{}, stop: make(chan struct{})}
	empty := []*rfp.Session{}
	s.list.Store(&empty)
	for i := 0; i < cfg.Partitions; i++ {
		p := &partition{id: i, srv: s, kv: store.Partition(i)}
		s.parts = append(s.parts, p)
		s.wg.Add(1)
		go p.run()
	}
	return s, nil
}

// Addr is the URL clients dial.
func (s *Server) Addr() string { return s.ln.Addr() }

// Clients is the number of connected clients.
func (s *Server) Clients() int { return int(s.clients.Load()) }

func (s *Server) now() int64 { return int64(time.Since(s.epoch)) }

// Serve accepts clients until ctx ends or Close; it then returns nil.
func (s *Server) Serve(ctx context.Context) error {
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.stop:
		}
	}()
	for {
		sess, err := s.ln.Accept(ctx)
		if err != nil {
			var he *rfp.HandshakeError
			if errors.As(err, &he) {
				s.cfg.Logf("jakiro: refused a client: %v", err)
				continue
			}
			select {
			case <-s.stop:
				return nil
			default:
			}
			if ctx.Err() != nil || errors.Is(err, fabric.ErrClosed) {
				return nil
			}
			return fmt.Errorf("server: accept: %w", err)
		}
		s.add(sess)
	}
}

func (s *Server) add(sess *rfp.Session) {
	s.mu.Lock()
	s.sessions[sess.ID] = sess
	s.publishLocked()
	s.mu.Unlock()
	s.clients.Add(1)
	s.cfg.Logf("jakiro: client %d connected", sess.ID)
	go func() {
		select {
		case <-sess.Done():
			s.cfg.Logf("jakiro: client %d gone: %v", sess.ID, sess.Err())
		case <-s.stop:
		}
		s.remove(sess)
	}()
}

func (s *Server) publishLocked() {
	l := make([]*rfp.Session, 0, len(s.sessions))
	for _, x := range s.sessions {
		l = append(l, x)
	}
	s.list.Store(&l)
	s.gen.Add(1)
}

// remove unpublishes a session, waits until no partition goroutine can
// still be scanning it, then frees its rings.
func (s *Server) remove(sess *rfp.Session) {
	s.mu.Lock()
	if _, ok := s.sessions[sess.ID]; !ok {
		s.mu.Unlock()
		return
	}
	delete(s.sessions, sess.ID)
	s.publishLocked()
	gen := s.gen.Load()
	s.mu.Unlock()
	for _, p := range s.parts {
		for p.seen.Load() < gen && !p.stopped.Load() {
			time.Sleep(50 * time.Microsecond)
		}
	}
	sess.Close()
	s.clients.Add(-1)
}

// Close stops accepting, disconnects every client, stops the partitions
// and frees the store. It is safe to call more than once.
func (s *Server) Close() error {
	// Serve's context watcher and the caller may both close: once, and
	// every caller returns after the shutdown is complete.
	s.closeOnce.Do(func() { s.closeErr = s.shutdown() })
	return s.closeErr
}

func (s *Server) shutdown() error {
	close(s.stop)
	for p := range s.parts {
		s.ln.RingBell(p) // wake partitions blocked on their doorbells
	}
	s.wg.Wait()
	err := s.ln.Close()
	s.mu.Lock()
	for _, sess := range s.sessions {
		sess.Close()
	}
	s.sessions = map[uint32]*rfp.Session{}
	s.mu.Unlock()
	s.store.Close()
	return err
}
