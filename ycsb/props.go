package ycsb

import (
	"fmt"
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

// conns is how many clients the go-ycsb threads share: Conns if set
// (never more than the threads), else one: a client.Client spreads its
// callers over connections (lanes) and drives them itself, as it does for
// any program with many goroutines.
func (c JakiroConfig) conns(threads int) int {
	if c.Conns > 0 {
		return max(1, min(c.Conns, threads))
	}
	return 1
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
