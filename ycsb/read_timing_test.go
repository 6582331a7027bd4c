package ycsb

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkReadOverhead: what JakiroDB.Read adds to the client's GetTo of
// the same records (go-ycsb's one-field 32 B records, no table), one
// thread, in turns of 1,000 of each so both see the same machine: the
// driver's share of a go-ycsb read (thread lookup, key, decoding the
// record into go-ycsb's map). Reports both per-operation times and
// their difference (driver-ns/op).
func BenchmarkReadOverhead(b *testing.B) {
	d := NewJakiroDB(JakiroConfig{Addr: startServer(b), FieldCount: 1})
	defer d.Close()
	ctx := d.InitThread(context.Background(), 0, 1)
	defer d.CleanupThread(ctx)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%015d", i)
		if err := d.Insert(ctx, "", keys[i], map[string][]byte{"field0": make([]byte, 32)}); err != nil {
			b.Fatal(err)
		}
	}
	t, err := thread(ctx)
	if err != nil {
		b.Fatal(err)
	}
	raw := make([][]byte, len(keys))
	for i, k := range keys {
		raw[i] = []byte(k)
	}
	const turn = 1000
	var read, get time.Duration
	var dst []byte
	b.ResetTimer()
	for i := 0; i < b.N; i += turn {
		n := min(turn, b.N-i)
		t0 := time.Now()
		for j := range n {
			if _, err := d.Read(ctx, "", keys[(i+j)%len(keys)], nil); err != nil {
				b.Fatal(err)
			}
		}
		read += time.Since(t0)
		t0 = time.Now()
		for j := range n {
			if dst, err = t.c.GetTo(ctx, raw[(i+j)%len(raw)], dst[:0]); err != nil {
				b.Fatal(err)
			}
		}
		get += time.Since(t0)
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(read), "read-ns/op")
	b.ReportMetric(per(get), "getto-ns/op")
	b.ReportMetric(per(read)-per(get), "driver-ns/op")
}
