package client

import (
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/rfp"
)

// Option configures Dial.
type Option func(*config)

type config struct {
	init   rfp.InitiatorConfig
	fabric fabric.Options
}

// WithMode picks rfp (default), reply or hybrid.
func WithMode(m Mode) Option { return func(c *config) { c.init.Mode = m } }

// WithRFS fixes the remote fetch size in bytes; 0 means auto (default).
func WithRFS(n int) Option { return func(c *config) { c.init.RFS = n } }

// WithWindow bounds outstanding requests per partition (default: the
// server's ring slots; more asks the server for deeper rings).
func WithWindow(n int) Option { return func(c *config) { c.init.Window = n } }

// WithFetchDelay fixes the wait before the first fetch READ; by default it
// adapts.
func WithFetchDelay(d time.Duration) Option {
	return func(c *config) { c.init.FetchDelayNS = int64(d) }
}

// WithHybridThreshold sets R, the not-ready READ streak that makes hybrid
// mode ask for replies.
func WithHybridThreshold(r int) Option { return func(c *config) { c.init.HybridR = r } }

// WithFabric passes fabric options (queue depth, RDMA device).
func WithFabric(o fabric.Options) Option { return func(c *config) { c.fabric = o } }
