package server

import (
	"sync"
	"time"
)

// rateLog passes at most burst lines a second to logf and counts the
// rest, reporting the count with the next line it passes: connection
// churn (thousands of clients connecting at once) must not flood the log.
type rateLog struct {
	logf  func(format string, args ...any)
	burst int

	mu         sync.Mutex
	window     time.Time
	n          int
	suppressed int
}

func newRateLog(logf func(string, ...any), burst int) *rateLog {
	return &rateLog{logf: logf, burst: burst}
}

func (r *rateLog) printf(format string, args ...any) {
	now := time.Now()
	r.mu.Lock()
	if now.Sub(r.window) >= time.Second {
		r.window, r.n = now, 0
	}
	if r.n >= r.burst {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	r.n++
	dropped := r.suppressed
	r.suppressed = 0
	r.mu.Unlock()
	if dropped > 0 {
		r.logf("jakiro: (%d connection events not logged: more than %d a second)", dropped, r.burst)
	}
	r.logf(format, args...)
}
