package client

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/jakiro-kv/jakiro/rfp"
)

// Client is a connection to one Jakiro server or to many, over which keys
// are spread by rendezvous hashing. Safe for concurrent use. A server
// whose connection breaks is dialled again in the background; meanwhile
// its keys fail fast with ErrUnavailable and the other servers' keys are
// served.
type Client struct {
	one     *server // the only server, else nil: its calls skip routing
	servers []*server
	route   *router // nil with one server
}

// Dial connects to the server at a fabric URL (shm://, tcp://, rdma://)
// or to every server of a comma-separated list of them, in any mix of
// fabrics ("tcp://a:7000,shm:///tmp/b.sock"; see also WithServers).
// With one server Dial fails if it cannot connect; with several it fails
// only if none answers, and dials the others again in the background.
// The program must link the fabric providers it uses, e.g. with
// import _ "github.com/jakiro-kv/jakiro/fabric/providers".
func Dial(ctx context.Context, addr string, opts ...Option) (*Client, error) {
	pollGroups() // sized by GOMAXPROCS now: a program sets it before it dials, if at all
	var cfg config
	cfg.engine.FetchDelayNS = -1
	cfg.engine.Mode = ModeAuto
	for _, o := range opts {
		o(&cfg)
	}
	list := cfg.servers
	if addr != "" || len(list) == 0 {
		list = append([]string{addr}, list...)
	}
	addrs, err := SplitAddrs(strings.Join(list, ","))
	if err != nil {
		return nil, err
	}
	return dialAll(ctx, addrs, cfg)
}

// Close disconnects from every server. Operations in flight fail with
// ErrClosed.
func (c *Client) Close() error {
	var errs []error
	for _, s := range c.servers {
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}

// live are the connections up now, in Dial's order.
func (c *Client) live() []*conn {
	var out []*conn
	for _, s := range c.servers {
		if cn := s.cur.Load(); cn != nil {
			out = append(out, cn)
		}
	}
	return out
}

// MaxValue is the largest value every connected server accepts (0 while
// none is connected).
func (c *Client) MaxValue() int {
	m := 0
	for i, cn := range c.live() {
		if i == 0 || cn.layout.MaxValue < m {
			m = cn.layout.MaxValue
		}
	}
	return m
}

// Partitions is the number of partitions of the servers connected now.
func (c *Client) Partitions() int {
	n := 0
	for _, cn := range c.live() {
		n += cn.layout.Partitions
	}
	return n
}

// Counters reports fabric operations, retries and round trips so far,
// summed over every server and connection.
func (c *Client) Counters() Counters {
	var sum Counters
	for _, s := range c.servers {
		sum = sum.Add(s.counters())
	}
	return sum
}

// RFS is the remote fetch size in use (it moves when RFS is auto); with
// many servers, that of the first one connected.
func (c *Client) RFS() int {
	if l := c.live(); len(l) > 0 {
		return l[0].rfs()
	}
	return 0
}

// FetchDelay is the current wait before a first fetch READ (it adapts
// unless fixed with WithFetchDelay); with many servers, that of the
// first one connected.
func (c *Client) FetchDelay() time.Duration {
	if l := c.live(); len(l) > 0 {
		return l[0].fetchDelay()
	}
	return 0
}

// pick is key's server; small enough to inline, so one server costs a
// nil check.
func (c *Client) pick(key []byte) *server {
	if s := c.one; s != nil {
		return s
	}
	return c.pickMany(key)
}

//go:noinline
func (c *Client) pickMany(key []byte) *server { return c.servers[c.route.pick(key)] }

// do runs one operation on key's server; the value is appended to dst.
func (s *server) do(ctx context.Context, op rfp.Op, key, value []byte, ttl uint32, dst []byte) ([]byte, error) {
	if s.laneSet != nil {
		s = s.lane()
	}
	cn := s.cur.Load() // conn's fast path, written out: conn does not inline
	if cn == nil {
		var err error
		if cn, err = s.connSlow(); err != nil {
			return dst, err
		}
	}
	if err := cn.check(key, value); err != nil {
		return dst, err
	}
	dst, err := cn.do(ctx, cn.partition(key), op, key, value, ttl, dst)
	if err != nil {
		err = s.opErr(cn, err)
	}
	return dst, err
}

// Get returns the value of key, or ErrNotFound.
func (c *Client) Get(ctx context.Context, key []byte) ([]byte, error) {
	v, err := c.pick(key).do(ctx, rfp.OpGet, key, nil, 0, nil)
	if err != nil {
		return nil, err
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// GetTo appends the value of key to dst: with a dst of enough capacity it
// allocates nothing.
func (c *Client) GetTo(ctx context.Context, key, dst []byte) ([]byte, error) {
	return c.pick(key).do(ctx, rfp.OpGet, key, nil, 0, dst)
}

// Put stores value under key; ttlSeconds 0 means no expiry.
func (c *Client) Put(ctx context.Context, key, value []byte, ttlSeconds uint32) error {
	_, err := c.pick(key).do(ctx, rfp.OpPut, key, value, ttlSeconds, nil)
	return err
}

// Delete removes key; ErrNotFound if it was absent.
func (c *Client) Delete(ctx context.Context, key []byte) error {
	_, err := c.pick(key).do(ctx, rfp.OpDelete, key, nil, 0, nil)
	return err
}

// Stats returns every partition's statistics as JSON documents, server
// after server in Dial's order; it fails if any server does (see
// ServerStats for each server's answer).
func (c *Client) Stats(ctx context.Context) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for _, s := range c.servers {
		parts, err := s.stats(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, parts...)
	}
	return out, nil
}

// Run executes the batch pipelined; with many servers, the parts of
// different servers run in parallel. It returns the first connection or
// context error; every operation's outcome is in Result, also when Run
// fails (the keys of servers that answered have their results).
func (c *Client) Run(ctx context.Context, b *Batch) error {
	if c.one != nil {
		b.split = false
		return c.one.run(ctx, b)
	}
	return c.runSplit(ctx, b)
}

// run executes b on this server.
func (s *server) run(ctx context.Context, b *Batch) error {
	if s.laneSet != nil {
		s = s.lane()
	}
	cn, err := s.conn()
	if err == nil {
		if err = cn.run(ctx, b); err != nil {
			err = s.opErr(cn, err)
		}
	}
	if err != nil {
		b.settle(err)
	}
	return err
}
