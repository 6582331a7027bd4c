package ycsb

import (
	"context"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/magiconair/properties"
	goycsb "github.com/pingcap/go-ycsb/pkg/ycsb"
)

type memcachedCreator struct{}

func (memcachedCreator) Create(p *properties.Properties) (goycsb.DB, error) {
	cfg, err := ParseMemcachedConfig(p)
	if err != nil {
		return nil, err
	}
	return NewMemcachedDB(cfg), nil
}

// MemcachedDB is a go-ycsb driver for memcached, with Jakiro's record
// encoding so both stores move the same bytes. One gomemcache client (a
// connection pool) serves every thread; idle connections are kept for as
// many threads as run.
type MemcachedDB struct {
	cfg MemcachedConfig
	mc  *memcache.Client
}

// NewMemcachedDB returns a driver for the server at cfg.Addr.
func NewMemcachedDB(cfg MemcachedConfig) *MemcachedDB {
	mc := memcache.New(cfg.Addr)
	mc.Timeout = cfg.Timeout
	mc.MaxIdleConns = 256
	return &MemcachedDB{cfg: cfg, mc: mc}
}

func (d *MemcachedDB) Close() error                                             { return d.mc.Close() }
func (d *MemcachedDB) InitThread(ctx context.Context, _, _ int) context.Context { return ctx }
func (d *MemcachedDB) CleanupThread(context.Context)                            {}

// memcached keys may not hold spaces or control characters; YCSB's are
// table/user<digits>.
func mcKey(table, key string) string {
	if table == "" {
		return key
	}
	return table + "/" + key
}

func (d *MemcachedDB) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	it, err := d.mc.Get(mcKey(table, key))
	if err != nil {
		return nil, err
	}
	return DecodeRecord(it.Value, fields)
}

func (d *MemcachedDB) Scan(context.Context, string, string, int, []string) ([]map[string][]byte, error) {
	return nil, ErrScanUnsupported
}

func (d *MemcachedDB) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	return d.mc.Set(&memcache.Item{Key: mcKey(table, key), Value: EncodeRecord(nil, values)})
}

// Update: whole records are one SET; partial ones read, merge and write
// back (not atomic, as in go-ycsb's redis driver).
func (d *MemcachedDB) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	if len(values) >= d.cfg.FieldCount {
		return d.Insert(ctx, table, key, values)
	}
	k := mcKey(table, key)
	it, err := d.mc.Get(k)
	if err != nil {
		return err
	}
	v, err := mergeRecord(nil, it.Value, values)
	if err != nil {
		return err
	}
	return d.mc.Set(&memcache.Item{Key: k, Value: v})
}

func (d *MemcachedDB) Delete(ctx context.Context, table, key string) error {
	return d.mc.Delete(mcKey(table, key))
}
