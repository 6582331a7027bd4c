package client

import (
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/rfp"
)

// Option configures Dial.
type Option func(*config)

type config struct {
	engine    rfp.EngineConfig
	conns     int // lanes per server; 0: one per poll group
	fabric    fabric.Options
	servers   []string // WithServers
	authToken string
}

// WithMode picks rfp, reply, hybrid or auto (default: see ModeAuto).
func WithMode(m Mode) Option { return func(c *config) { c.engine.Mode = m } }

// WithRFS fixes the remote fetch size in bytes; 0 means auto (default).
func WithRFS(n int) Option { return func(c *config) { c.engine.RFS = n } }

// WithWindow bounds outstanding requests per partition (default: the
// server's --slots; more asks the server for a deeper window).
func WithWindow(n int) Option { return func(c *config) { c.engine.Window = n } }

// WithFetchDelay fixes the wait before the first fetch READ; by default it
// adapts.
func WithFetchDelay(d time.Duration) Option {
	return func(c *config) { c.engine.FetchDelayNS = int64(d) }
}

// WithHybridThreshold sets R, the not-ready READ streak that makes hybrid
// mode ask for replies.
func WithHybridThreshold(r int) Option { return func(c *config) { c.engine.HybridR = r } }

// WithAuthToken presents token to the server at the handshake; by
// default the client presents $JAKIRO_AUTH_TOKEN, if set. A server that
// wants another token refuses with ErrAuth.
func WithAuthToken(token string) Option { return func(c *config) { c.authToken = token } }

// WithFabric passes fabric options (queue depth, RDMA device).
func WithFabric(o fabric.Options) Option { return func(c *config) { c.fabric = o } }

// WithConns sets how many connections (lanes) the client keeps to each
// server for its callers to spread over; by default one per poll group
// (half of GOMAXPROCS at the first Dial, at least one), dialled as
// concurrent callers first need them. WithConns(1) keeps one.
func WithConns(n int) Option { return func(c *config) { c.conns = n } }

// lanes is how many connections to keep to each server.
func (c config) lanes() int {
	if c.conns > 0 {
		return c.conns
	}
	return len(pollGroups())
}
