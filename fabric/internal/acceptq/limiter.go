package acceptq

import (
	"fmt"
	"sync"
	"time"
)

// limiter logs at most one line a second per reason, counting the rest.
type limiter struct {
	logf   func(format string, args ...any)
	prefix string

	mu      sync.Mutex
	reasons map[string]*reason
}

type reason struct {
	last   time.Time
	hidden int
}

// logEvery is the least time between two lines of one reason.
const logEvery = time.Second

func (l *limiter) printf(why, format string, args ...any) {
	if l.logf == nil {
		return
	}
	l.mu.Lock()
	if l.reasons == nil {
		l.reasons = map[string]*reason{}
	}
	r := l.reasons[why]
	if r == nil {
		r = &reason{}
		l.reasons[why] = r
	}
	now := time.Now()
	if !r.last.IsZero() && now.Sub(r.last) < logEvery {
		r.hidden++
		l.mu.Unlock()
		return
	}
	hidden := r.hidden
	r.last, r.hidden = now, 0
	l.mu.Unlock()
	msg := fmt.Sprintf(format, args...)
	if hidden > 0 {
		msg += fmt.Sprintf(" (and %d more like it since the last report)", hidden)
	}
	l.logf("%s: %s", l.prefix, msg)
}
