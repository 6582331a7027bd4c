package server

import (
	"fmt"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/kv"
	"github.com/jakiro-kv/jakiro/rfp"
)

// Config configures a server. Zero values take defaults.
type Config struct {
	Listen     string // fabric URL, default shm:///tmp/jakiro.sock
	Partitions int    // default 2
	Memory     int64  // store budget, default 1 GiB
	MaxValue   int    // largest value, default 64 KiB (slots are sized for it)
	Slots      int    // ring slots per client per partition, default 8
	Store      bool   // store mode: no eviction, out-of-memory errors
	ApproxLRU  bool
	// SpinIdle is how long a partition busy-polls an empty pass before it
	// starts dozing (default 200µs); DozeSleep bounds the wake-up latency
	// (default 20µs).
	SpinIdle  time.Duration
	DozeSleep time.Duration
	// IdlePoll makes idle partitions poll every DozeSleep instead of
	// blocking on their doorbells: a tighter wake-up bound for some idle
	// CPU. Fabrics without doorbells (verbs) always poll.
	IdlePoll bool
	Fabric   fabric.Options
	Logf     func(format string, args ...any)
}

func (c Config) withDefaults() (Config, error) {
	if c.Listen == "" {
		c.Listen = "shm:///tmp/jakiro.sock"
	}
	if c.Partitions == 0 {
		c.Partitions = 2
	}
	if c.Memory == 0 {
		c.Memory = 1 << 30
	}
	if c.MaxValue == 0 {
		c.MaxValue = 64 << 10
	}
	if c.Slots == 0 {
		c.Slots = rfp.DefaultSlots
	}
	if c.SpinIdle == 0 {
		c.SpinIdle = 200 * time.Microsecond
	}
	if c.DozeSleep == 0 {
		c.DozeSleep = 20 * time.Microsecond
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	if c.MaxValue > rfp.MaxValueLen {
		return c, fmt.Errorf("server: max value %d over the protocol's %d", c.MaxValue, rfp.MaxValueLen)
	}
	if c.Partitions < 1 || c.Partitions > rfp.MaxPartitions {
		return c, fmt.Errorf("server: partitions %d outside 1..%d", c.Partitions, rfp.MaxPartitions)
	}
	return c, nil
}

func (c Config) kvConfig() kv.Config {
	mode := kv.ModeCache
	if c.Store {
		mode = kv.ModeStore
	}
	return kv.Config{Partitions: c.Partitions, Memory: c.Memory, MaxValue: c.MaxValue, Mode: mode, ApproxLRU: c.ApproxLRU}
}
