package main

import (
	"context"
	"runtime"

	"github.com/magiconair/properties"
	goycsb "github.com/pingcap/go-ycsb/pkg/ycsb"
)

// yieldDB is a go-ycsb database that does nothing but give up its thread's
// turn once per operation (runtime.Gosched), as a thread waiting on any
// remote database must at least once. Its rate is the load generator's
// own ceiling for a thread count: with many threads, each operation then
// resumes a thread whose stack and generator state have left the cache,
// a cost that grows with the threads whatever the database.
type yieldDB struct{}

func init() { goycsb.RegisterDBCreator(yieldDBName, yieldDB{}) }

const yieldDBName = "noop-yield"

func (yieldDB) Create(*properties.Properties) (goycsb.DB, error) { return yieldDB{}, nil }

func (yieldDB) Close() error { return nil }

func (yieldDB) InitThread(ctx context.Context, _, _ int) context.Context { return ctx }

func (yieldDB) CleanupThread(context.Context) {}

func (yieldDB) Read(context.Context, string, string, []string) (map[string][]byte, error) {
	runtime.Gosched()
	return nil, nil
}

func (yieldDB) Scan(context.Context, string, string, int, []string) ([]map[string][]byte, error) {
	runtime.Gosched()
	return nil, nil
}

func (yieldDB) Update(context.Context, string, string, map[string][]byte) error {
	runtime.Gosched()
	return nil
}

func (yieldDB) Insert(context.Context, string, string, map[string][]byte) error {
	runtime.Gosched()
	return nil
}

func (yieldDB) Delete(context.Context, string, string) error {
	runtime.Gosched()
	return nil
}
