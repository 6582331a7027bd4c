package kv

import (
	"sync"
	"sync/atomic"
	"time"
)

// The coarse clock: Unix seconds in an atomic, refreshed by one ticker
// goroutine while at least one Store uses it, as memcached keeps its
// current_time. Reading it costs one load instead of a time.Now call.
var coarse struct {
	mu    sync.Mutex
	users int
	stop  chan struct{}
	now   atomic.Uint32
}

const coarseTick = 100 * time.Millisecond

func unixNow() uint32 { return uint32(time.Now().Unix()) }

func coarseNow() uint32 { return coarse.now.Load() }

// acquireCoarse starts the ticker for the first user.
func acquireCoarse() {
	coarse.mu.Lock()
	defer coarse.mu.Unlock()
	coarse.users++
	if coarse.users > 1 {
		return
	}
	coarse.now.Store(unixNow())
	stop := make(chan struct{})
	coarse.stop = stop
	go func() {
		t := time.NewTicker(coarseTick)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				coarse.now.Store(unixNow())
			case <-stop:
				return
			}
		}
	}()
}

// releaseCoarse stops the ticker after the last user.
func releaseCoarse() {
	coarse.mu.Lock()
	defer coarse.mu.Unlock()
	coarse.users--
	if coarse.users == 0 {
		close(coarse.stop)
		coarse.stop = nil
	}
}
