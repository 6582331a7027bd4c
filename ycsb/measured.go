package ycsb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/bradfitz/gomemcache/memcache"
	goycsb "github.com/pingcap/go-ycsb/pkg/ycsb"

	"github.com/jakiro-kv/jakiro/client"
)

// threadStats are the measurements of a few threads (thread i records
// into stats[i mod len]); merged after the run. Shared, not one per thread:
// a histogram is ~200 KB, and a thousand of them made every record a
// cache miss, a load-generator cost that grew with the thread count.
type threadStats struct {
	mu    sync.Mutex
	perOp map[string]*hdr.Histogram
	errs  map[string]int64
	miss  int64        // reads of keys not stored: answered, not failed
	ops   atomic.Int64 // read by the progress reporter
	first error
}

func (s *threadStats) record(op string, start time.Time, n int, err error) {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return // cut short by the end of the run: neither done nor failed
	}
	lat := int64(time.Since(start))
	s.mu.Lock()
	defer s.mu.Unlock()
	if isMiss(err) {
		s.miss += int64(n)
		err = nil
	}
	if err != nil {
		s.errs[op] += int64(n)
		if s.first == nil {
			s.first = fmt.Errorf("%s: %w", op, err)
		}
		return
	}
	h := s.perOp[op]
	if h == nil {
		h = newHist()
		s.perOp[op] = h
	}
	// A batch's operations all complete when the batch does.
	h.RecordValues(lat, int64(n))
	s.ops.Add(int64(n))
}

// measured times every operation into its thread's stats. Each thread
// has its own.
type measured struct {
	db goycsb.DB
	s  *threadStats
}

func (m *measured) Close() error { return nil }
func (m *measured) InitThread(ctx context.Context, _, _ int) context.Context {
	return ctx
}
func (m *measured) CleanupThread(context.Context) {}

func (m *measured) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	t := time.Now()
	v, err := m.db.Read(ctx, table, key, fields)
	m.s.record("READ", t, 1, err)
	return v, err
}

func (m *measured) Scan(ctx context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	t := time.Now()
	v, err := m.db.Scan(ctx, table, startKey, count, fields)
	m.s.record("SCAN", t, 1, err)
	return v, err
}

func (m *measured) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	t := time.Now()
	err := m.db.Update(ctx, table, key, values)
	m.s.record("UPDATE", t, 1, err)
	return err
}

func (m *measured) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	t := time.Now()
	err := m.db.Insert(ctx, table, key, values)
	m.s.record("INSERT", t, 1, err)
	return err
}

func (m *measured) Delete(ctx context.Context, table, key string) error {
	t := time.Now()
	err := m.db.Delete(ctx, table, key)
	m.s.record("DELETE", t, 1, err)
	return err
}

func (m *measured) BatchRead(ctx context.Context, table string, keys []string, fields []string) ([]map[string][]byte, error) {
	if b, ok := m.db.(goycsb.BatchDB); ok {
		t := time.Now()
		v, err := b.BatchRead(ctx, table, keys, fields)
		m.s.record("READ", t, len(keys), err)
		return v, err
	}
	out := make([]map[string][]byte, len(keys))
	for i, k := range keys {
		v, err := m.Read(ctx, table, k, fields)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (m *measured) BatchInsert(ctx context.Context, table string, keys []string, values []map[string][]byte) error {
	if b, ok := m.db.(goycsb.BatchDB); ok {
		t := time.Now()
		err := b.BatchInsert(ctx, table, keys, values)
		m.s.record("INSERT", t, len(keys), err)
		return err
	}
	for i, k := range keys {
		if err := m.Insert(ctx, table, k, values[i]); err != nil {
			return err
		}
	}
	return nil
}

func (m *measured) BatchUpdate(ctx context.Context, table string, keys []string, values []map[string][]byte) error {
	if b, ok := m.db.(goycsb.BatchDB); ok {
		t := time.Now()
		err := b.BatchUpdate(ctx, table, keys, values)
		m.s.record("UPDATE", t, len(keys), err)
		return err
	}
	for i, k := range keys {
		if err := m.Update(ctx, table, k, values[i]); err != nil {
			return err
		}
	}
	return nil
}

func (m *measured) BatchDelete(ctx context.Context, table string, keys []string) error {
	if b, ok := m.db.(goycsb.BatchDB); ok {
		t := time.Now()
		err := b.BatchDelete(ctx, table, keys)
		m.s.record("DELETE", t, len(keys), err)
		return err
	}
	for _, k := range keys {
		if err := m.Delete(ctx, table, k); err != nil {
			return err
		}
	}
	return nil
}

// isMiss reports a read of a key the store does not hold. go-ycsb's
// zipfian key chooser includes one key past those loaded; Redis answers it
// with an empty record, the cache drivers with a miss: all count as done.
func isMiss(err error) bool {
	return errors.Is(err, client.ErrNotFound) || errors.Is(err, memcache.ErrCacheMiss)
}
