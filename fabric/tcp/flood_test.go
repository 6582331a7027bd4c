package tcp

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// logSink collects a listener's log lines.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logSink) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// 1,100 half-open connections (5 bytes of hello, then nothing) do not
// lock an honest dialer out, and the listener says what it turned away.
func TestHalfOpenFlood(t *testing.T) {
	var log logSink
	ln := listen(t, fabric.Options{Logf: log.logf})
	addr := strings.TrimPrefix(ln.Addr(), "tcp://")
	const flood = 1100
	held := make([]net.Conn, 0, flood)
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	hello := putHS(nil, kindHello, 16, nil)[:5]
	for i := range flood {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("flood connection %d: %v", i, err)
		}
		if _, err := c.Write(hello); err != nil {
			t.Fatalf("flood connection %d: %v", i, err)
		}
		held = append(held, c)
	}
	// The honest dialer comes from the same address as the flood: the
	// hardest case for per-source caps.
	if err := servesNew(t, ln); err != nil {
		t.Fatal("an honest dialer during the flood:", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(log.text(), "closed the oldest") {
		if time.Now().After(deadline) {
			t.Fatalf("nothing logged about the flood; log:\n%s", log.text())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := strings.Count(log.text(), "\n") + 1; n > 20 {
		t.Fatalf("%d log lines for one flood: not rate-limited:\n%s", n, log.text())
	}
}
