package ycsb

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/magiconair/properties"
	goycsb "github.com/pingcap/go-ycsb/pkg/ycsb"

	"github.com/jakiro-kv/jakiro/client"
)

// ErrScanUnsupported is Scan's answer: hash-partitioned stores keep no key order.
var ErrScanUnsupported = errors.New("ycsb: scan is unsupported (Jakiro and memcached are hash tables; workload E cannot run)")

func init() {
	goycsb.RegisterDBCreator("jakiro", jakiroCreator{})
	goycsb.RegisterDBCreator("memcached", memcachedCreator{})
}

type jakiroCreator struct{}

func (jakiroCreator) Create(p *properties.Properties) (goycsb.DB, error) {
	cfg, err := ParseJakiroConfig(p)
	if err != nil {
		return nil, err
	}
	return NewJakiroDB(cfg), nil
}

// JakiroDB is the go-ycsb driver. go-ycsb threads share one client (or,
// with jakiro.conns=N, thread i uses client i mod N, dialled by the first
// thread that needs it). A Client serves many goroutines: it spreads
// them over its lanes, and one caller at a time drives each group of
// connections for all of them, so a thousand threads cost a few
// connections with many requests each.
type JakiroDB struct {
	cfg JakiroConfig

	mu      sync.Mutex
	clients []*sharedClient // by thread mod len, sized by the first InitThread
	retired client.Counters // counters of clients already closed
}

// sharedClient is one client and the threads using it.
type sharedClient struct {
	c     *client.Client
	err   error // dial failure, returned by every operation of its threads
	users int
}

// NewJakiroDB returns a driver; it dials nothing until InitThread.
func NewJakiroDB(cfg JakiroConfig) *JakiroDB {
	return &JakiroDB{cfg: cfg}
}

type jakiroThread struct {
	c      *client.Client
	err    error
	shared *sharedClient
	buf    []byte
	val    []byte
	rec    map[string][]byte // Read's answer and its values' bytes, reused: see Read
	recBuf []byte
	batch  client.Batch
	bufs   [][]byte
}

type threadKey struct{}

func (d *JakiroDB) dial(ctx context.Context) (*client.Client, error) {
	opts := []client.Option{client.WithMode(d.cfg.Mode), client.WithRFS(d.cfg.RFS)}
	if d.cfg.Window > 0 {
		opts = append(opts, client.WithWindow(d.cfg.Window))
	}
	return client.Dial(ctx, d.cfg.Addr, opts...)
}

// InitThread gives the thread its client, dialling it if it is the
// first of its threads. A dial failure is kept and returned by every
// operation: go-ycsb's InitThread cannot fail.
func (d *JakiroDB) InitThread(ctx context.Context, threadID, threadCount int) context.Context {
	d.mu.Lock()
	if d.clients == nil {
		d.clients = make([]*sharedClient, d.cfg.conns(threadCount))
	}
	i := threadID % len(d.clients)
	if i < 0 {
		i += len(d.clients)
	}
	sc := d.clients[i]
	if sc == nil || sc.users == 0 {
		sc = &sharedClient{}
		sc.c, sc.err = d.dial(ctx) // under d.mu: threads of other clients wait for this dial, once
		d.clients[i] = sc
	}
	sc.users++
	d.mu.Unlock()
	t := &jakiroThread{c: sc.c, err: sc.err, shared: sc}
	return context.WithValue(ctx, threadKey{}, t)
}

// CleanupThread lets go of the thread's client; the last of its threads
// closes it, keeping its counters.
func (d *JakiroDB) CleanupThread(ctx context.Context) {
	t, _ := ctx.Value(threadKey{}).(*jakiroThread)
	if t == nil || t.shared == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	sc := t.shared
	t.shared = nil
	if sc.users--; sc.users == 0 && sc.c != nil {
		d.retired = d.retired.Add(sc.c.Counters())
		sc.c.Close()
		sc.c = nil
	}
}

// Close closes any client still open.
func (d *JakiroDB) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, sc := range d.clients {
		if sc != nil && sc.c != nil {
			d.retired = d.retired.Add(sc.c.Counters())
			sc.c.Close()
			sc.c, sc.users = nil, 0
		}
	}
	return nil
}

// Counters sums the protocol counters of every client this driver opened.
func (d *JakiroDB) Counters() client.Counters {
	d.mu.Lock()
	defer d.mu.Unlock()
	sum := d.retired
	for _, sc := range d.clients {
		if sc != nil && sc.c != nil {
			sum = sum.Add(sc.c.Counters())
		}
	}
	return sum
}

func thread(ctx context.Context) (*jakiroThread, error) {
	t, _ := ctx.Value(threadKey{}).(*jakiroThread)
	if t == nil {
		return nil, errors.New("ycsb: jakiro: operation outside InitThread")
	}
	return t, t.err
}

// recordKey is table/key, as go-ycsb's redis driver names records; with
// an empty table (the paper workloads: 16 B keys) just the key.
func recordKey(dst []byte, table, key string) []byte {
	if table == "" {
		return append(dst[:0], key...)
	}
	dst = append(dst[:0], table...)
	dst = append(dst, '/')
	return append(dst, key...)
}

func (d *JakiroDB) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	t, err := thread(ctx)
	if err != nil {
		return nil, err
	}
	t.buf = recordKey(t.buf, table, key)
	t.val, err = t.c.GetTo(ctx, t.buf, t.val[:0])
	if err != nil {
		return nil, err
	}
	// The map and the bytes its values point into are the thread's until
	// its next Read, not its next operation: go-ycsb's read-modify-write
	// checks what it read after its update. So the bytes just read become
	// recBuf, and the last Read's are the scratch the others write into.
	t.recBuf, t.val = t.val, t.recBuf[:0]
	t.rec, err = decodeRecord(t.rec, t.recBuf, fields, true)
	return t.rec, err
}

func (d *JakiroDB) Scan(context.Context, string, string, int, []string) ([]map[string][]byte, error) {
	return nil, ErrScanUnsupported
}

func (d *JakiroDB) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	t, err := thread(ctx)
	if err != nil {
		return err
	}
	t.buf = recordKey(t.buf, table, key)
	t.val = EncodeRecord(t.val[:0], values)
	return t.c.Put(ctx, t.buf, t.val, d.cfg.TTL)
}

// Update overwrites the fields given. An update of every field is one PUT;
// a partial one reads the record and writes the merge (not atomic, as in
// go-ycsb's redis driver).
func (d *JakiroDB) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	if len(values) >= d.cfg.FieldCount {
		return d.Insert(ctx, table, key, values)
	}
	t, err := thread(ctx)
	if err != nil {
		return err
	}
	t.buf = recordKey(t.buf, table, key)
	old, err := t.c.Get(ctx, t.buf)
	if err != nil {
		return err
	}
	if t.val, err = mergeRecord(t.val[:0], old, values); err != nil {
		return err
	}
	return t.c.Put(ctx, t.buf, t.val, d.cfg.TTL)
}

func (d *JakiroDB) Delete(ctx context.Context, table, key string) error {
	t, err := thread(ctx)
	if err != nil {
		return err
	}
	t.buf = recordKey(t.buf, table, key)
	return t.c.Delete(ctx, t.buf)
}

// keyBufs gives n reusable key buffers holding table/keys[i].
func (t *jakiroThread) keyBufs(table string, keys []string) [][]byte {
	for len(t.bufs) < len(keys) {
		t.bufs = append(t.bufs, nil)
	}
	for i, k := range keys {
		t.bufs[i] = recordKey(t.bufs[i], table, k)
	}
	return t.bufs[:len(keys)]
}

// runBatch runs t.batch and returns the first per-operation error.
func (t *jakiroThread) runBatch(ctx context.Context) error {
	if err := t.c.Run(ctx, &t.batch); err != nil {
		return err
	}
	for i := 0; i < t.batch.Len(); i++ {
		if _, err := t.batch.Result(i); err != nil {
			return fmt.Errorf("batch op %d: %w", i, err)
		}
	}
	return nil
}

// BatchRead pipelines GETs through one client.Batch.
func (d *JakiroDB) BatchRead(ctx context.Context, table string, keys []string, fields []string) ([]map[string][]byte, error) {
	t, err := thread(ctx)
	if err != nil {
		return nil, err
	}
	t.batch.Reset()
	for _, k := range t.keyBufs(table, keys) {
		t.batch.Get(k)
	}
	if err := t.runBatch(ctx); err != nil {
		return nil, err
	}
	// One copy of every value, then records decoded in place: the batch's
	// buffers are reused by the next call.
	n := 0
	for i := range keys {
		v, _ := t.batch.Result(i)
		n += len(v)
	}
	own := make([]byte, 0, n)
	out := make([]map[string][]byte, len(keys))
	for i := range out {
		v, _ := t.batch.Result(i)
		own = append(own, v...)
		if out[i], err = decodeRecord(nil, own[len(own)-len(v):], fields, true); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// BatchInsert pipelines PUTs.
func (d *JakiroDB) BatchInsert(ctx context.Context, table string, keys []string, values []map[string][]byte) error {
	t, err := thread(ctx)
	if err != nil {
		return err
	}
	t.batch.Reset()
	kb := t.keyBufs(table, keys)
	// Values are encoded back to back in one buffer; grow it first so the
	// slices handed to the batch stay valid.
	t.val = t.val[:0]
	offs := make([]int, len(keys)+1)
	for i := range keys {
		t.val = EncodeRecord(t.val, values[i])
		offs[i+1] = len(t.val)
	}
	for i, k := range kb {
		t.batch.Put(k, t.val[offs[i]:offs[i+1]], d.cfg.TTL)
	}
	return t.runBatch(ctx)
}

// BatchUpdate is BatchInsert when every update is whole; otherwise it
// merges record by record.
func (d *JakiroDB) BatchUpdate(ctx context.Context, table string, keys []string, values []map[string][]byte) error {
	for _, v := range values {
		if len(v) < d.cfg.FieldCount {
			for i, k := range keys {
				if err := d.Update(ctx, table, k, values[i]); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return d.BatchInsert(ctx, table, keys, values)
}

// BatchDelete pipelines DELETEs.
func (d *JakiroDB) BatchDelete(ctx context.Context, table string, keys []string) error {
	t, err := thread(ctx)
	if err != nil {
		return err
	}
	t.batch.Reset()
	for _, k := range t.keyBufs(table, keys) {
		t.batch.Delete(k)
	}
	return t.runBatch(ctx)
}
