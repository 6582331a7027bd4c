package client

import (
	"context"
	"fmt"
	"sync"

	"github.com/jakiro-kv/jakiro/rfp"
)

// The memcached commands. Each is one request to the key's partition, run
// by that partition's one goroutine, so compare-and-swap and counters are
// exact without locks. Their arguments beyond key, value and TTL travel at
// the head of the request's value (rfp/commands.go): a value stored with
// flags or a version takes rfp.StoreExtraLen bytes of the server's
// --max-value. A condition that fails is a typed error: ErrNotStored,
// ErrExists, ErrNotFound, ErrNotNumeric.

// Item is a value with what the server keeps beside it.
type Item struct {
	Value []byte
	// Version changes with every write of the item (memcached's cas
	// unique); CompareAndSwap takes it.
	Version uint64
	// Flags are the 32 bits the client stored with the value.
	Flags uint32
}

// GetItem returns key's value with its version and flags (memcached's
// gets), or ErrNotFound.
func (c *Client) GetItem(ctx context.Context, key []byte) (Item, error) {
	return c.item(ctx, rfp.OpGets, key, 0)
}

// GetAndTouch is GetItem that also gives the item a new TTL in seconds (0:
// none), as memcached's gat.
func (c *Client) GetAndTouch(ctx context.Context, key []byte, ttlSeconds uint32) (Item, error) {
	return c.item(ctx, rfp.OpGat, key, ttlSeconds)
}

// Touch gives key's item a new TTL in seconds (0: none), keeping its value,
// flags and version; ErrNotFound if it is absent or expired.
func (c *Client) Touch(ctx context.Context, key []byte, ttlSeconds uint32) error {
	_, err := c.item(ctx, rfp.OpTouch, key, ttlSeconds)
	return err
}

func (c *Client) item(ctx context.Context, op rfp.Op, key []byte, ttl uint32) (Item, error) {
	v, err := c.pick(key).do(ctx, op, key, nil, ttl, nil)
	if err != nil {
		return Item{}, err
	}
	return parseItem(op, v)
}

// parseItem reads the answer of OpGets, OpGat or OpTouch.
func parseItem(op rfp.Op, v []byte) (Item, error) {
	ver, flags, val, ok := rfp.ParseMeta(v)
	if !ok {
		return Item{}, fmt.Errorf("%w: %v answer of %d bytes", ErrBadResponse, op, len(v))
	}
	if op == rfp.OpTouch {
		val = nil
	} else if val == nil {
		val = []byte{}
	}
	return Item{Value: val, Version: ver, Flags: flags}, nil
}

// Set stores value under key with client flags; ttlSeconds 0 means no
// expiry. It returns the item's new version.
func (c *Client) Set(ctx context.Context, key, value []byte, ttlSeconds, flags uint32) (uint64, error) {
	return c.store(ctx, key, value, ttlSeconds, rfp.StoreArgs{Mode: rfp.StoreSet, Flags: flags})
}

// Add is Set only if key is absent: ErrNotStored if it exists (take a
// lock, fill a cache once).
func (c *Client) Add(ctx context.Context, key, value []byte, ttlSeconds, flags uint32) (uint64, error) {
	return c.store(ctx, key, value, ttlSeconds, rfp.StoreArgs{Mode: rfp.StoreAdd, Flags: flags})
}

// Replace is Set only if key exists: ErrNotStored if it is absent.
func (c *Client) Replace(ctx context.Context, key, value []byte, ttlSeconds, flags uint32) (uint64, error) {
	return c.store(ctx, key, value, ttlSeconds, rfp.StoreArgs{Mode: rfp.StoreReplace, Flags: flags})
}

// Append adds value after key's value, keeping its flags and TTL:
// ErrNotStored if key is absent, ErrTooLarge past the server's maximum.
func (c *Client) Append(ctx context.Context, key, value []byte) (uint64, error) {
	return c.store(ctx, key, value, 0, rfp.StoreArgs{Mode: rfp.StoreAppend})
}

// Prepend adds value before key's value, as Append.
func (c *Client) Prepend(ctx context.Context, key, value []byte) (uint64, error) {
	return c.store(ctx, key, value, 0, rfp.StoreArgs{Mode: rfp.StorePrepend})
}

// CompareAndSwap is Set only if key's item still has version (from
// GetItem): ErrExists if it has another (someone wrote it meanwhile),
// ErrNotFound if it is gone. version 0 is refused (ErrBadRequest).
func (c *Client) CompareAndSwap(ctx context.Context, key, value []byte, ttlSeconds, flags uint32, version uint64) (uint64, error) {
	if version == 0 {
		return 0, fmt.Errorf("%w: compare-and-swap with version 0", ErrBadRequest)
	}
	return c.store(ctx, key, value, ttlSeconds, rfp.StoreArgs{Mode: rfp.StoreSet, Flags: flags, CAS: version})
}

// extraBufs holds request values (extras + value) between calls.
var extraBufs = sync.Pool{New: func() any { return new([]byte) }}

func (c *Client) store(ctx context.Context, key, value []byte, ttl uint32, a rfp.StoreArgs) (uint64, error) {
	bp := extraBufs.Get().(*[]byte)
	defer extraBufs.Put(bp)
	req := append((*bp)[:0], make([]byte, rfp.StoreExtraLen)...)
	rfp.PutStoreArgs(req, a)
	req = append(req, value...)
	*bp = req
	var out [8]byte
	v, err := c.pick(key).do(ctx, rfp.OpStore, key, req, ttl, out[:0])
	if err != nil {
		return 0, err
	}
	return parseVersion(v)
}

// parseVersion reads a store command's answer: the item's new version.
func parseVersion(v []byte) (uint64, error) {
	ver, ok := rfp.ParseVersion(v)
	if !ok {
		return 0, fmt.Errorf("%w: store answer of %d bytes", ErrBadResponse, len(v))
	}
	return ver, nil
}

// Incr adds delta to key's value, a decimal unsigned 64-bit number, and
// returns the result; it wraps at 2^64 as memcached does. ErrNotFound if
// key is absent, ErrNotNumeric if its value is not such a number.
func (c *Client) Incr(ctx context.Context, key []byte, delta uint64) (uint64, error) {
	return c.Counter(ctx, key, CounterArgs{Delta: delta})
}

// Decr subtracts delta from key's number, stopping at 0 as memcached does;
// errors as Incr.
func (c *Client) Decr(ctx context.Context, key []byte, delta uint64) (uint64, error) {
	return c.Counter(ctx, key, CounterArgs{Delta: delta, Decr: true})
}

// CounterArgs are the arguments of Counter.
type CounterArgs struct {
	Delta uint64
	Decr  bool
	// Create: a missing key is stored as Initial (with Flags and TTL) and
	// Initial returned, instead of ErrNotFound.
	Create  bool
	Initial uint64
	Flags   uint32
	TTL     uint32 // seconds, of a created item
}

// Counter is Incr or Decr with every option of memcached's binary
// protocol.
func (c *Client) Counter(ctx context.Context, key []byte, a CounterArgs) (uint64, error) {
	var req [rfp.IncrExtraLen]byte
	rfp.PutIncrArgs(req[:], rfp.IncrArgs{Decr: a.Decr, Create: a.Create, Delta: a.Delta, Initial: a.Initial, Flags: a.Flags})
	var out [rfp.IncrResultLen]byte
	v, err := c.pick(key).do(ctx, rfp.OpIncr, key, req[:], a.TTL, out[:0])
	if err != nil {
		return 0, err
	}
	return parseCount(v)
}

// parseCount reads a counter's answer: the number after it.
func parseCount(v []byte) (uint64, error) {
	n, _, ok := rfp.ParseIncrResult(v)
	if !ok {
		return 0, fmt.Errorf("%w: counter answer of %d bytes", ErrBadResponse, len(v))
	}
	return n, nil
}

// Flush drops every item of every server, now (delaySeconds 0) or
// delaySeconds from now (memcached's flush_all). Items stored before the
// flush happens go with it.
func (c *Client) Flush(ctx context.Context, delaySeconds uint32) error {
	for _, s := range c.servers {
		if err := s.flush(ctx, delaySeconds); err != nil {
			return err
		}
	}
	return nil
}

func (s *server) flush(ctx context.Context, delay uint32) error {
	cn, err := s.conn()
	if err != nil {
		return err
	}
	for p := range cn.layout.Partitions {
		if _, err := cn.do(ctx, p, rfp.OpFlush, nil, nil, delay, nil); err != nil {
			return s.opErr(cn, err)
		}
	}
	return nil
}
