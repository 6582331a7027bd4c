package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/rfp"
)

// WithServers adds servers to the ones Dial's address names (Dial's
// address may then be empty). Keys are spread over all of them.
func WithServers(addrs ...string) Option {
	return func(c *config) { c.servers = append(c.servers, addrs...) }
}

// dialAll connects to every server in parallel. One server must answer
// (else Dial fails as before); with several, those that do not are
// dialled again in the background while the others serve.
func dialAll(ctx context.Context, addrs []string, cfg config) (*Client, error) {
	for _, a := range addrs {
		if err := knownFabric(a); err != nil {
			return nil, err
		}
	}
	c := &Client{servers: make([]*server, len(addrs))}
	for i, a := range addrs {
		c.servers[i] = newServer(a, cfg)
	}
	if len(addrs) == 1 {
		if err := c.servers[0].connect(ctx); err != nil {
			c.servers[0].close()
			return nil, err
		}
		c.one = c.servers[0]
		return c, nil
	}
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, s := range c.servers {
		wg.Go(func() { errs[i] = s.connect(ctx) })
	}
	wg.Wait()
	if !slices.Contains(errs, nil) {
		c.Close()
		return nil, errors.Join(errs...)
	}
	for _, s := range c.servers {
		s.redialLater() // only those that are down
	}
	c.route = newRouter(addrs)
	return c, nil
}

// knownFabric rejects an address no linked provider can dial: a wrong
// list is a mistake to report now, not a server to redial forever.
func knownFabric(addr string) error {
	u, err := url.Parse(addr)
	if err != nil {
		return fmt.Errorf("jakiro: address %q: %w", addr, err)
	}
	if !slices.Contains(fabric.Schemes(), u.Scheme) {
		return fmt.Errorf("jakiro: address %q: %w", addr, fabric.NoProviderError(u.Scheme))
	}
	return nil
}

// Servers are the addresses of the client's servers, in Dial's order.
func (c *Client) Servers() []string {
	out := make([]string, len(c.servers))
	for i, s := range c.servers {
		out[i] = s.addr
	}
	return out
}

// ServerFor is the address of the server that holds key.
func (c *Client) ServerFor(key []byte) string { return c.pick(key).addr }

// ServerStats is one server's answer to Client.ServerStats.
type ServerStats struct {
	Addr string
	// Partitions holds a JSON document per partition (see Client.Stats).
	Partitions []json.RawMessage
	Err        error // why the server did not answer
}

// ServerStats asks every server for its partitions' statistics. A
// server that fails has Err set; the others still answer.
func (c *Client) ServerStats(ctx context.Context) []ServerStats {
	out := make([]ServerStats, len(c.servers))
	for i, s := range c.servers {
		out[i].Addr = s.addr
		out[i].Partitions, out[i].Err = s.stats(ctx)
	}
	return out
}

func (s *server) stats(ctx context.Context) ([]json.RawMessage, error) {
	cn, err := s.conn()
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, cn.layout.Partitions)
	for p := range out {
		v, err := cn.do(ctx, p, rfp.OpStats, nil, nil, 0, nil)
		if err != nil {
			return nil, s.opErr(cn, err)
		}
		out[p] = v
	}
	return out, nil
}

// ServerCounters is one server's view from this client.
type ServerCounters struct {
	Addr     string
	Counters Counters // over every connection to it so far
	// Connected says whether a connection is up now; Err says why not.
	Connected  bool
	Err        error
	Reconnects int // connections made after the first
}

// ServerCounters reports the client's counters and connection state per
// server, in Dial's order.
func (c *Client) ServerCounters() []ServerCounters {
	out := make([]ServerCounters, len(c.servers))
	for i, s := range c.servers {
		s.mu.Lock()
		out[i] = ServerCounters{Addr: s.addr, Err: s.down, Reconnects: s.reconnects, Connected: s.cur.Load() != nil}
		s.mu.Unlock()
		out[i].Counters = s.counters()
	}
	return out
}

// runSplit runs a batch over many servers: one part per server, the
// parts in parallel, each pipelined over its server's partitions.
func (c *Client) runSplit(ctx context.Context, b *Batch) error {
	n := len(c.servers)
	for len(b.parts) < n {
		b.parts = append(b.parts, Batch{})
	}
	for i := range b.parts {
		b.parts[i].Reset()
	}
	b.at = b.at[:0]
	for i := range b.ops {
		o := &b.ops[i]
		s := c.route.pick(o.key)
		j := b.parts[s].add(o.op, o.key, o.value, o.ttl)
		b.parts[s].ops[j].refused = o.refused
		b.at = append(b.at, opRef{part: int32(s), idx: int32(j)})
	}
	b.split = true
	b.errs = slices.Grow(b.errs[:0], n)[:n]
	clear(b.errs)
	var wg sync.WaitGroup
	last := -1 // the last non-empty part runs on this goroutine
	for s := range n {
		if b.parts[s].Len() == 0 {
			continue
		}
		if p := last; p >= 0 {
			wg.Go(func() { b.errs[p] = c.servers[p].run(ctx, &b.parts[p]) })
		}
		last = s
	}
	if last >= 0 {
		b.errs[last] = c.servers[last].run(ctx, &b.parts[last])
	}
	wg.Wait()
	for _, err := range b.errs {
		if err != nil {
			return err
		}
	}
	return nil
}
