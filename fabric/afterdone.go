package fabric

import (
	"sync"
	"sync/atomic"
)

// DoneNotifier is a Conn that runs functions when it ends without a
// goroutine waiting for each (shm, tcp): watching a connection then costs its
// owner no goroutine start on the way in, nor a wake-up to stop it.
type DoneNotifier interface {
	AfterDone(f func()) (stop func() bool)
}

// AfterDone arranges for f to run in its own goroutine once c's Done is
// closed, as context.AfterFunc does for a context: stop ends the
// arrangement and reports whether it stopped f from being started (false:
// f has started, or stop was called before).
func AfterDone(c Conn, f func()) (stop func() bool) {
	if n, ok := c.(DoneNotifier); ok {
		return n.AfterDone(f)
	}
	var state atomic.Int32 // 0 waiting, 1 started, 2 stopped
	quit := make(chan struct{})
	go func() {
		select {
		case <-c.Done():
			if state.CompareAndSwap(0, 1) {
				f()
			}
		case <-quit:
		}
	}()
	return func() bool {
		if state.CompareAndSwap(0, 2) {
			close(quit)
			return true
		}
		return false
	}
}

// AfterList is what a DoneNotifier keeps: the functions to start when
// its connection ends. The zero value is ready.
type AfterList struct {
	mu    sync.Mutex
	ended bool
	fs    []*func()
}

// Add is DoneNotifier.AfterDone: f starts at End, or at once if End ran.
func (l *AfterList) Add(f func()) (stop func() bool) {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	p := &f
	l.fs = append(l.fs, p)
	l.mu.Unlock()
	return func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		if *p == nil {
			return false
		}
		*p = nil
		return true
	}
}

// End starts each function added and not stopped, each in its own
// goroutine (the caller may hold locks they take), once.
func (l *AfterList) End() {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return
	}
	l.ended = true
	fs := l.fs
	l.fs = nil
	for _, p := range fs {
		if f := *p; f != nil {
			*p = nil
			go f()
		}
	}
	l.mu.Unlock()
}
