package server

import (
	"os"
	"runtime"
	"sync"
	"time"
)

// With no RFP client connected a partition spins for nobody: it sleeps,
// and the memcached door's connections run their commands on its store
// themselves (door.go), as memcached's worker threads do. The Go runtime
// then has more Ps than the work has threads, and every wake-up of a
// connection's goroutine also wakes a thread to look for work on an idle
// P: on 2 cores the door took 16.8 µs of server CPU per operation at the
// machine's GOMAXPROCS against 13.4 µs at one P per partition (memcached
// -t 1: 12.5 µs). So a server with Config.DoorProcs runs with one P per
// partition while no RFP client has been connected for procsIdleAfter,
// and with its full Ps again from the moment one connects, before the
// partitions can see it.

// procsIdleAfter: how long without an RFP client before the Ps shrink, so
// that clients coming and going one at a time (the CLI) do not stop the
// world at each connection.
var procsIdleAfter = time.Second

// procs sizes the process's Ps to the RFP clients connected.
type procs struct {
	on         bool
	full, idle int // Ps with and without RFP clients

	mu      sync.Mutex
	clients int         // RFP clients connected
	shrunk  bool        // running with idle Ps
	timer   *time.Timer // shrinks after procsIdleAfter without clients
	armed   uint64      // counts timers: one stopped too late finds itself stale
	closed  bool
}

// newProcs: an explicit GOMAXPROCS in the environment is the user's
// choice, and is kept.
func newProcs(on bool, partitions int) *procs {
	full := runtime.GOMAXPROCS(0)
	return &procs{on: on && partitions < full && os.Getenv("GOMAXPROCS") == "", full: full, idle: partitions}
}

// start arms the first shrink: the server has no client yet.
func (p *procs) start() {
	if !p.on {
		return
	}
	p.mu.Lock()
	p.armLocked()
	p.mu.Unlock()
}

// connected: an RFP client is about to be served; the Ps grow at once.
func (p *procs) connected() {
	if !p.on {
		return
	}
	p.mu.Lock()
	p.clients++
	p.growLocked()
	p.mu.Unlock()
}

// growLocked cancels a shrink to come and undoes one done.
func (p *procs) growLocked() {
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
		p.armed++
	}
	if p.shrunk {
		p.shrunk = false
		runtime.GOMAXPROCS(p.full)
	}
}

// gone: n RFP clients left.
func (p *procs) gone(n int) {
	if !p.on {
		return
	}
	p.mu.Lock()
	p.clients -= n
	if p.clients == 0 {
		p.armLocked()
	}
	p.mu.Unlock()
}

func (p *procs) armLocked() {
	if p.closed || p.timer != nil {
		return
	}
	p.armed++
	armed := p.armed
	p.timer = time.AfterFunc(procsIdleAfter, func() { p.shrink(armed) })
}

// shrink runs when the timer armed as armed fires.
func (p *procs) shrink(armed uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if armed != p.armed {
		return // stopped after it fired, or a newer one is armed
	}
	p.timer = nil
	if p.clients == 0 && !p.shrunk && !p.closed {
		p.shrunk = true
		runtime.GOMAXPROCS(p.idle)
	}
}

// close gives the process its full Ps back for good.
func (p *procs) close() {
	if !p.on {
		return
	}
	p.mu.Lock()
	p.closed = true
	p.growLocked()
	p.mu.Unlock()
}

// spareProcs gives the process one P more than busy, the goroutines that
// keep theirs (spinning partitions, the fabric's goroutines blocked in
// system calls), unless it has them or the environment sets GOMAXPROCS
// (Config.SpareProcs).
func spareProcs(busy int) {
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < busy+1 {
		runtime.GOMAXPROCS(busy + 1)
	}
}
