package client

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/jakiro-kv/jakiro/rfp"
)

// Client is a connection to a Jakiro server. Safe for concurrent use.
type Client struct {
	mu       sync.Mutex
	in       *rfp.Initiator
	layout   rfp.Layout
	slotCall []*call // the caller waiting on each ring slot, nil if none
	free     []*call
	results  []rfp.Result
	closed   bool
}

// call is one caller's pending operation.
type call struct {
	done bool
	st   rfp.Status
	val  []byte // copy of the value, reused across calls
}

// Dial connects to a server at a fabric URL (shm://, tcp://, rdma://).
func Dial(ctx context.Context, addr string, opts ...Option) (*Client, error) {
	refreshProcs() // a program sets GOMAXPROCS before it dials, if at all
	var cfg config
	cfg.init.FetchDelayNS = -1
	for _, o := range opts {
		o(&cfg)
	}
	in, err := rfp.Dial(ctx, addr, cfg.init, cfg.fabric)
	if err != nil {
		return nil, fmt.Errorf("jakiro: dial %s: %w", addr, err)
	}
	l := in.Layout()
	return &Client{in: in, layout: l, slotCall: make([]*call, l.Partitions*l.Slots),
		results: make([]rfp.Result, l.Partitions*l.Slots)}, nil
}

// Close disconnects. Operations in flight fail with ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return c.in.Close()
}

// MaxValue is the largest value the server accepts.
func (c *Client) MaxValue() int { return c.layout.MaxValue }

// Partitions is the number of server partitions.
func (c *Client) Partitions() int { return c.layout.Partitions }

// Counters reports fabric operations, retries and round trips so far.
func (c *Client) Counters() rfp.Counters {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.in.Counters()
}

// RFS is the remote fetch size in use (it moves when RFS is auto).
func (c *Client) RFS() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.in.RFS()
}

// FetchDelay is the current wait before a first fetch READ (it adapts
// unless fixed with WithFetchDelay).
func (c *Client) FetchDelay() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Duration(c.in.FetchDelayNS())
}

func (c *Client) check(key, value []byte) error {
	if len(key) == 0 || len(key) > rfp.MaxKeyLen {
		return fmt.Errorf("%w: key is %d bytes", ErrBadKey, len(key))
	}
	if len(value) > c.layout.MaxValue {
		return fmt.Errorf("%w: %d bytes, server maximum %d", ErrTooLarge, len(value), c.layout.MaxValue)
	}
	return nil
}

func (c *Client) getCall() *call {
	if n := len(c.free); n > 0 {
		cl := c.free[n-1]
		c.free = c.free[:n-1]
		return cl
	}
	return &call{}
}

// progressLocked drives the engine once and hands results to their callers.
func (c *Client) progressLocked() error {
	if c.closed {
		return ErrClosed
	}
	n, err := c.in.Progress(c.results)
	for _, r := range c.results[:n] {
		cl := c.slotCall[r.Slot]
		c.slotCall[r.Slot] = nil
		if cl == nil {
			continue // its caller gave up (context ended)
		}
		cl.done, cl.st = true, r.Status
		cl.val = append(cl.val[:0], r.Value...)
	}
	if err != nil {
		return fmt.Errorf("jakiro: connection failed: %w", err)
	}
	return nil
}

// submitLocked waits for a free slot in the key's partition and submits.
func (c *Client) submitLocked(ctx context.Context, p int, op rfp.Op, key, value []byte, ttl uint32, cl *call) error {
	var w waitState
	defer w.done()
	for !c.in.Free(p) {
		if err := c.progressLocked(); err != nil {
			return err
		}
		if c.in.Free(p) {
			break
		}
		if err := c.wait(ctx, &w); err != nil {
			return err
		}
	}
	slot, err := c.in.Submit(p, op, key, value, ttl)
	if err != nil {
		return err
	}
	cl.done = false
	c.slotCall[slot] = cl
	return nil
}

// do runs one operation synchronously; the value is appended to dst.
func (c *Client) do(ctx context.Context, p int, op rfp.Op, key, value []byte, ttl uint32, dst []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.getCall()
	if err := c.submitLocked(ctx, p, op, key, value, ttl, cl); err != nil {
		c.free = append(c.free, cl)
		return dst, err
	}
	var w waitState
	defer w.done()
	for !cl.done {
		if err := c.progressLocked(); err != nil {
			return dst, err
		}
		if cl.done {
			break
		}
		if err := c.wait(ctx, &w); err != nil {
			// Abandon: the slot is reclaimed when the answer arrives.
			for i, x := range c.slotCall {
				if x == cl {
					c.slotCall[i] = nil
				}
			}
			return dst, err
		}
	}
	dst = append(dst, cl.val...)
	st := cl.st
	c.free = append(c.free, cl)
	return dst, statusErr(st)
}

func (c *Client) partition(key []byte) int {
	return rfp.PartitionOf(rfp.KeyHash(key), c.layout.Partitions)
}

// Get returns the value of key, or ErrNotFound.
func (c *Client) Get(ctx context.Context, key []byte) ([]byte, error) {
	if err := c.check(key, nil); err != nil {
		return nil, err
	}
	v, err := c.do(ctx, c.partition(key), rfp.OpGet, key, nil, 0, nil)
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
	if err := c.check(key, nil); err != nil {
		return dst, err
	}
	return c.do(ctx, c.partition(key), rfp.OpGet, key, nil, 0, dst)
}

// Put stores value under key; ttlSeconds 0 means no expiry.
func (c *Client) Put(ctx context.Context, key, value []byte, ttlSeconds uint32) error {
	if err := c.check(key, value); err != nil {
		return err
	}
	_, err := c.do(ctx, c.partition(key), rfp.OpPut, key, value, ttlSeconds, nil)
	return err
}

// Delete removes key; ErrNotFound if it was absent.
func (c *Client) Delete(ctx context.Context, key []byte) error {
	if err := c.check(key, nil); err != nil {
		return err
	}
	_, err := c.do(ctx, c.partition(key), rfp.OpDelete, key, nil, 0, nil)
	return err
}

// Stats returns every partition's statistics as JSON documents.
func (c *Client) Stats(ctx context.Context) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, c.layout.Partitions)
	for p := range out {
		v, err := c.do(ctx, p, rfp.OpStats, nil, nil, 0, nil)
		if err != nil {
			return nil, err
		}
		out[p] = v
	}
	return out, nil
}
