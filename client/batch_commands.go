package client

import (
	"fmt"

	"github.com/jakiro-kv/jakiro/rfp"
)

// The memcached commands in a Batch (commands.go has them one at a time).
// Their arguments travel at the head of the request's value, which the
// batch assembles in memory it keeps across Reset, so key and value may
// change once the command is added; keys must stay until Run returns, as
// for Get. Results come with ResultVersion (stores), ResultCount
// (counters) and ResultItem (GetItem, GetAndTouch, Touch).

// command adds op with a request value of extra bytes of arguments (the
// returned slice, for the caller to fill) followed by value.
func (b *Batch) command(op rfp.Op, key []byte, ttl uint32, extra int, value []byte) (int, []byte) {
	i := b.add(op, key, nil, ttl)
	o := &b.ops[i]
	o.req = append(append(o.req[:0], make([]byte, extra)...), value...)
	o.value = o.req
	return i, o.req[:extra]
}

func (b *Batch) store(key, value []byte, ttl uint32, a rfp.StoreArgs) int {
	i, args := b.command(rfp.OpStore, key, ttl, rfp.StoreExtraLen, value)
	rfp.PutStoreArgs(args, a)
	return i
}

// Set adds a store of value with client flags (ttlSeconds 0: no expiry).
func (b *Batch) Set(key, value []byte, ttlSeconds, flags uint32) int {
	return b.store(key, value, ttlSeconds, rfp.StoreArgs{Mode: rfp.StoreSet, Flags: flags})
}

// Add adds Set only if key is absent (ErrNotStored if it exists).
func (b *Batch) Add(key, value []byte, ttlSeconds, flags uint32) int {
	return b.store(key, value, ttlSeconds, rfp.StoreArgs{Mode: rfp.StoreAdd, Flags: flags})
}

// Replace adds Set only if key exists (ErrNotStored if absent).
func (b *Batch) Replace(key, value []byte, ttlSeconds, flags uint32) int {
	return b.store(key, value, ttlSeconds, rfp.StoreArgs{Mode: rfp.StoreReplace, Flags: flags})
}

// Append adds value after key's value (ErrNotStored if absent).
func (b *Batch) Append(key, value []byte) int {
	return b.store(key, value, 0, rfp.StoreArgs{Mode: rfp.StoreAppend})
}

// Prepend adds value before key's value (ErrNotStored if absent).
func (b *Batch) Prepend(key, value []byte) int {
	return b.store(key, value, 0, rfp.StoreArgs{Mode: rfp.StorePrepend})
}

// CompareAndSwap adds Set only if key's item still has version: ErrExists
// if it has another, ErrNotFound if it is gone; version 0 is refused
// (ErrBadRequest) without being sent.
func (b *Batch) CompareAndSwap(key, value []byte, ttlSeconds, flags uint32, version uint64) int {
	i := b.store(key, value, ttlSeconds, rfp.StoreArgs{Mode: rfp.StoreSet, Flags: flags, CAS: version})
	if version == 0 {
		b.ops[i].refused = fmt.Errorf("%w: compare-and-swap with version 0", ErrBadRequest)
	}
	return i
}

// Incr adds an increment of key's decimal number by delta.
func (b *Batch) Incr(key []byte, delta uint64) int {
	return b.Counter(key, CounterArgs{Delta: delta})
}

// Decr adds a decrement of key's number by delta, stopping at 0.
func (b *Batch) Decr(key []byte, delta uint64) int {
	return b.Counter(key, CounterArgs{Delta: delta, Decr: true})
}

// Counter adds Incr or Decr with every option of Client.Counter.
func (b *Batch) Counter(key []byte, a CounterArgs) int {
	i, args := b.command(rfp.OpIncr, key, a.TTL, rfp.IncrExtraLen, nil)
	rfp.PutIncrArgs(args, rfp.IncrArgs{Decr: a.Decr, Create: a.Create, Delta: a.Delta, Initial: a.Initial, Flags: a.Flags})
	return i
}

// GetItem adds a GET that also returns the item's version and flags.
func (b *Batch) GetItem(key []byte) int { return b.add(rfp.OpGets, key, nil, 0) }

// GetAndTouch adds GetItem that also gives the item a new TTL.
func (b *Batch) GetAndTouch(key []byte, ttlSeconds uint32) int {
	return b.add(rfp.OpGat, key, nil, ttlSeconds)
}

// Touch adds a new TTL for key's item (ErrNotFound if absent or expired).
func (b *Batch) Touch(key []byte, ttlSeconds uint32) int {
	return b.add(rfp.OpTouch, key, nil, ttlSeconds)
}

// ResultVersion is a store command's outcome: the item's new version.
func (b *Batch) ResultVersion(i int) (uint64, error) {
	v, err := b.Result(i)
	if err != nil {
		return 0, err
	}
	return parseVersion(v)
}

// ResultCount is a counter's outcome: the number after it.
func (b *Batch) ResultCount(i int) (uint64, error) {
	v, err := b.Result(i)
	if err != nil {
		return 0, err
	}
	return parseCount(v)
}

// ResultItem is the outcome of GetItem, GetAndTouch or Touch (which brings
// no value); Value is valid until the batch is reused.
func (b *Batch) ResultItem(i int) (Item, error) {
	v, err := b.Result(i)
	if err != nil {
		return Item{}, err
	}
	return parseItem(b.opAt(i).op, v)
}
