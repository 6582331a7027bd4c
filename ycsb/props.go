package ycsb

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/magiconair/properties"

	"github.com/jakiro-kv/jakiro/client"
)

// Property names of the jakiro driver.
const (
	PropAddr   = "jakiro.addr"
	PropMode   = "jakiro.mode"
	PropRFS    = "jakiro.rfs"
	PropWindow = "jakiro.window"
	PropTTL    = "jakiro.ttl"
	PropConns  = "jakiro.conns"

	DefaultAddr = "shm:///tmp/jakiro.sock"
)

// Property names of the memcached driver.
const (
	PropMemcachedAddr    = "memcached.addr"
	PropMemcachedTimeout = "memcached.timeout"
)

// JakiroConfig is the jakiro driver's configuration.
type JakiroConfig struct {
	Addr       string // one fabric URL or a comma-separated list
	Mode       client.Mode
	RFS        int // 0 = auto
	Window     int // 0 = the server's ring slots
	TTL        uint32
	Conns      int // clients the go-ycsb threads share; 0 = auto (see conns)
	FieldCount int // YCSB fieldcount: an update of this many fields replaces the record
}

// ParseJakiroConfig reads the jakiro.* properties (and fieldcount).
func ParseJakiroConfig(p *properties.Properties) (JakiroConfig, error) {
	c := JakiroConfig{Addr: strings.TrimSpace(p.GetString(PropAddr, DefaultAddr))}
	if c.Addr == "" {
		return c, fmt.Errorf("ycsb: %s is empty", PropAddr)
	}
	if _, err := client.SplitAddrs(c.Addr); err != nil { // a server list
		return c, fmt.Errorf("ycsb: %s: %w", PropAddr, err)
	}
	var err error
	if c.Mode, err = client.ParseMode(strings.ToLower(strings.TrimSpace(p.GetString(PropMode, "auto")))); err != nil {
		return c, fmt.Errorf("ycsb: %s: %w", PropMode, err)
	}
	if c.RFS, err = ParseRFS(p.GetString(PropRFS, "auto")); err != nil {
		return c, err
	}
	if c.Window, err = nonNegative(p, PropWindow, 0); err != nil {
		return c, err
	}
	ttl, err := nonNegative(p, PropTTL, 0)
	if err != nil {
		return c, err
	}
	c.TTL = uint32(ttl)
	if c.Conns, err = nonNegative(p, PropConns, 0); err != nil {
		return c, err
	}
	if c.FieldCount, err = nonNegative(p, "fieldcount", 10); err != nil {
		return c, err
	}
	return c, nil
}

// By default (jakiro.conns=auto) each go-ycsb thread has its own client
// while there are at most ownConnsPerProc threads per P; more threads
// share sharedConnsPerProc clients per P. Measured on 2 Ps, read-only
// (ycsbthreads, two runs): 8 threads did best on their own connections
// (325-354 k ops/s vs 263-301 k on 4); 64 to 1,024 threads on 4
// connections (300-337 k, 259-280 k, 192-257 k at 64, 256, 1,024) rather
// than 8 (290-301 k, 270-276 k, 140-163 k): each connection's window then
// stays full, and fewer connections mean fewer places to poll.
const (
	ownConnsPerProc    = 4
	sharedConnsPerProc = 2
)

// conns is how many clients the go-ycsb threads share: Conns if set
// (never more than the threads), else see ownConnsPerProc.
func (c JakiroConfig) conns(threads int) int {
	if c.Conns > 0 {
		return max(1, min(c.Conns, threads))
	}
	procs := runtime.GOMAXPROCS(0)
	if strings.HasPrefix(c.Addr, "tcp://") {
		// Over tcp every send and every read of a connection is a system
		// call on both sides: threads sharing a connection share them (a
		// batch goes out in one send). Measured on 2 Ps, reply mode, 95/5
		// zipfian: 4 threads on 1 connection 23-26 k ops/s, on 2 18 k, on
		// 4 12-14 k; 64 threads 17-25 k on 1 to 8 (noise).
		return max(1, min(threads, procs/2))
	}
	if threads <= ownConnsPerProc*procs {
		return max(1, threads)
	}
	return sharedConnsPerProc * procs
}

// ParseRFS reads a remote fetch size: bytes, or "auto" (0).
func ParseRFS(s string) (int, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "auto" || s == "" || s == "0" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < client.MinRFS {
		return 0, fmt.Errorf("ycsb: %s=%q: want auto or a byte count >= %d", PropRFS, s, client.MinRFS)
	}
	return n, nil
}

func nonNegative(p *properties.Properties, name string, def int) (int, error) {
	s, ok := p.Get(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("ycsb: %s=%q: want a non-negative integer", name, s)
	}
	return n, nil
}

// MemcachedConfig is the memcached driver's configuration.
type MemcachedConfig struct {
	Addr       string
	Timeout    time.Duration
	FieldCount int
}

// ParseMemcachedConfig reads the memcached.* properties (and fieldcount).
func ParseMemcachedConfig(p *properties.Properties) (MemcachedConfig, error) {
	c := MemcachedConfig{Addr: strings.TrimSpace(p.GetString(PropMemcachedAddr, "127.0.0.1:11211"))}
	if c.Addr == "" {
		return c, fmt.Errorf("ycsb: %s is empty", PropMemcachedAddr)
	}
	var err error
	if c.Timeout, err = time.ParseDuration(p.GetString(PropMemcachedTimeout, "1s")); err != nil || c.Timeout <= 0 {
		return c, fmt.Errorf("ycsb: %s: want a positive duration", PropMemcachedTimeout)
	}
	if c.FieldCount, err = nonNegative(p, "fieldcount", 10); err != nil {
		return c, err
	}
	return c, nil
}
