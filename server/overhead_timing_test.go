package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/rfp"
)

// BenchmarkClientOverhead: one GET at a time on shm through the client
// SDK and through a bare engine loop (rfp.Engine over its own
// connection to the same server: submit, post, poll until the answer is
// in, nothing else), in turns of overheadTurn GETs each, so that both see
// the same machine: on a VM the round trip's floor moves by 2-3x from one
// process to the next as the host places the vCPUs, and a comparison of
// two runs mostly measures that. Reports both medians and 99th
// percentiles and their ratios (client / bare): what the SDK's driving
// adds to a lone caller's GET, robust to that noise.
// window8/* does the same with windows of 8 GETs (Client.Run of a
// Batch; the bare loop submits 8 and polls until all 8 are in), timing
// each window.
func BenchmarkClientOverhead(b *testing.B) {
	const overheadTurn = 2000
	srv := startServer(b, e2eListenTB(b, "shm"), "JAKIRO_E2E_PARTITIONS=1")
	for _, m := range modes {
		b.Run("window8/"+m.String(), func(b *testing.B) {
			ctx := context.Background()
			c, bare, keys := overheadPair(b, srv.Addr, m)
			hc := hdrhistogram.New(1, int64(time.Second), 3)
			hb := hdrhistogram.New(1, int64(time.Second), 3)
			var batch client.Batch
			const window = 8
			for i := 0; i < b.N; i += overheadTurn {
				n := min(overheadTurn, b.N-i)
				for j := range n {
					k := (i + j) * window % (len(keys) - window)
					batch.Reset()
					for _, key := range keys[k : k+window] {
						batch.Get(key)
					}
					t0 := time.Now()
					if err := c.Run(ctx, &batch); err != nil {
						b.Fatal(err)
					}
					hc.RecordValue(int64(time.Since(t0)))
				}
				for j := range n {
					k := (i + j) * window % (len(keys) - window)
					t0 := time.Now()
					if err := bare.getWindow(keys[k : k+window]); err != nil {
						b.Fatal(err)
					}
					hb.RecordValue(int64(time.Since(t0)))
				}
			}
			b.StopTimer()
			reportOverhead(b, hc, hb)
		})
	}
	for _, m := range modes {
		b.Run(m.String(), func(b *testing.B) {
			ctx := context.Background()
			c, bare, keys := overheadPair(b, srv.Addr, m)
			hc := hdrhistogram.New(1, int64(time.Second), 3)
			hb := hdrhistogram.New(1, int64(time.Second), 3)
			var dst []byte
			var err error
			b.ResetTimer()
			for i := 0; i < b.N; i += overheadTurn {
				n := min(overheadTurn, b.N-i)
				for j := range n {
					t0 := time.Now()
					if dst, err = c.GetTo(ctx, keys[(i+j)%len(keys)], dst[:0]); err != nil {
						b.Fatal(err)
					}
					hc.RecordValue(int64(time.Since(t0)))
				}
				for j := range n {
					t0 := time.Now()
					if dst, err = bare.get(keys[(i+j)%len(keys)], dst[:0]); err != nil {
						b.Fatal(err)
					}
					hb.RecordValue(int64(time.Since(t0)))
				}
			}
			b.StopTimer()
			if len(dst) != 32 {
				b.Fatalf("bare loop got %d bytes, want 32", len(dst))
			}
			reportOverhead(b, hc, hb)
		})
	}
}

// overheadPair dials a client and a bare loop in mode m (both closed at
// the benchmark's end) and loads 1,000 keys.
func overheadPair(b *testing.B, addr string, m rfp.Mode) (*client.Client, *bareLoop, [][]byte) {
	c, err := client.Dial(context.Background(), addr, client.WithMode(m))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	bare := dialBare(b, addr, m)
	b.Cleanup(func() { bare.fc.Close() })
	return c, bare, loadKeys(b, c, 1000)
}

// reportOverhead reports the client's (hc) and the bare loop's (hb)
// quantiles and their ratios.
func reportOverhead(b *testing.B, hc, hb *hdrhistogram.Histogram) {
	cp50, cp99 := float64(hc.ValueAtQuantile(50))/1e3, float64(hc.ValueAtQuantile(99))/1e3
	bp50, bp99 := float64(hb.ValueAtQuantile(50))/1e3, float64(hb.ValueAtQuantile(99))/1e3
	b.ReportMetric(cp50, "p50-µs")
	b.ReportMetric(cp99, "p99-µs")
	b.ReportMetric(bp50, "bare-p50-µs")
	b.ReportMetric(bp99, "bare-p99-µs")
	b.ReportMetric(cp50/bp50, "p50-x-bare")
	b.ReportMetric(cp99/bp99, "p99-x-bare")
}

// bareLoop is an rfp.Engine driven one request at a time over its own
// connection, as the client's driver would with nothing else to do.
type bareLoop struct {
	fc     fabric.Conn
	ringer fabric.Ringer
	eng    *rfp.Engine
	parts  int
	comps  []fabric.Completion
	epoch  time.Time
}

func dialBare(b *testing.B, addr string, m rfp.Mode) *bareLoop {
	link, err := rfp.Dial(context.Background(), addr, rfp.DialConfig{})
	if err != nil {
		b.Fatal(err)
	}
	ringer, _ := link.Conn.(fabric.Ringer)
	watcher, _ := link.Conn.(fabric.BellWatcher)
	cfg := rfp.EngineConfig{Mode: m.Resolve(false), FetchDelayNS: -1, Bells: ringer != nil,
		QuietRingNS: rfp.QuietRingOf(addr), CopyReads: fabric.ReadsCopy(link.Conn)}
	if watcher != nil && ringer != nil {
		cfg.Blocked = watcher.BellBlocked
	}
	eng, err := rfp.NewEngine(link.Local, link.Welcome, cfg)
	if err != nil {
		link.Conn.Close()
		b.Fatal(err)
	}
	if link.Control != nil {
		eng.Queue(*link.Control)
	}
	return &bareLoop{fc: link.Conn, ringer: ringer, eng: eng, parts: link.Welcome.Layout.Partitions,
		comps: make([]fabric.Completion, 64), epoch: time.Now()}
}

func (l *bareLoop) flush() error {
	e := l.eng
	if ops := e.Pending(); len(ops) > 0 {
		if err := l.fc.Post(ops); err != nil {
			return err
		}
		e.Posted()
	}
	if rings := e.Rings(); len(rings) > 0 {
		for _, p := range rings {
			l.ringer.RingBell(p)
		}
		e.Rang()
	}
	return nil
}

// getWindow GETs keys together (one WRITE a partition) and waits for
// all of their answers.
func (l *bareLoop) getWindow(keys [][]byte) error {
	e := l.eng
	now := int64(time.Since(l.epoch))
	for _, key := range keys {
		if _, err := e.Submit(now, rfp.PartitionOf(rfp.KeyHash(key), l.parts), rfp.OpGet, key, nil, 0); err != nil {
			return err
		}
	}
	for got, deadline := 0, now+int64(5*time.Second); got < len(keys); {
		n, err := l.step()
		if err != nil {
			return err
		}
		got += n
		if now = int64(time.Since(l.epoch)); now > deadline {
			return fmt.Errorf("bare loop: %d of %d answers in 5 s", got, len(keys))
		}
	}
	return nil
}

// step posts, reaps and ticks once; it returns the answers that came,
// each checked to be a 32 B value.
func (l *bareLoop) step() (int, error) {
	e := l.eng
	if err := l.flush(); err != nil {
		return 0, err
	}
	n, err := l.fc.Poll(l.comps)
	if err != nil {
		return 0, err
	}
	now := int64(time.Since(l.epoch))
	for _, c := range l.comps[:n] {
		if err := e.Complete(now, c); err != nil {
			return 0, err
		}
	}
	if now >= e.Next() {
		e.Tick(now)
	}
	rs := e.Results()
	for _, r := range rs {
		if r.Status != rfp.StatusOK || len(r.Value) != 32 {
			return 0, fmt.Errorf("bare loop: status %v, %d B", r.Status, len(r.Value))
		}
	}
	e.Consumed()
	return len(rs), nil
}

func (l *bareLoop) get(key, dst []byte) ([]byte, error) {
	e := l.eng
	now := int64(time.Since(l.epoch))
	p := rfp.PartitionOf(rfp.KeyHash(key), l.parts)
	if _, err := e.Submit(now, p, rfp.OpGet, key, nil, 0); err != nil {
		return dst, err
	}
	for deadline := now + int64(5*time.Second); ; {
		if err := l.flush(); err != nil {
			return dst, err
		}
		n, err := l.fc.Poll(l.comps)
		if err != nil {
			return dst, err
		}
		now = int64(time.Since(l.epoch))
		for _, c := range l.comps[:n] {
			if err := e.Complete(now, c); err != nil {
				return dst, err
			}
		}
		if now >= e.Next() {
			e.Tick(now)
		}
		if rs := e.Results(); len(rs) > 0 {
			r := rs[0]
			dst = append(dst, r.Value...)
			e.Consumed()
			if r.Status != rfp.StatusOK {
				return dst, fmt.Errorf("bare loop: status %v", r.Status)
			}
			return dst, nil
		}
		if now > deadline {
			return dst, fmt.Errorf("bare loop: no answer in 5 s")
		}
	}
}
