package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/jakiro-kv/jakiro/client"
)

// BenchmarkDial: what a short-lived program pays to read one value: Dial,
// the first GET of a 32 B value, Close, in a loop from one process (one
// source address over tcp), against a one-partition server at its
// defaults; and memcached's connect + get + close on loopback in the same
// run when it is installed. Reports the median and 99th percentile of one
// join, and each fabric's ratio to memcached; and the socket floor
// (dialfloor_test.go) beside shm's.
func BenchmarkDial(b *testing.B) {
	p := map[string][2]float64{}
	key, val := []byte("dial-key-0000001"), make([]byte, 32)
	for _, fab := range e2eFabrics() {
		b.Run(fab, func(b *testing.B) {
			srv := startServer(b, e2eListenTB(b, fab), "JAKIRO_E2E_PARTITIONS=1")
			ctx := context.Background()
			c, err := client.Dial(ctx, srv.Addr)
			if err != nil {
				b.Fatal(err)
			}
			err = c.Put(ctx, key, val, 0)
			c.Close()
			if err != nil {
				b.Fatal(err)
			}
			var ph joinPhases
			p[fab] = timeJoins(b, func() error {
				t0 := time.Now()
				c, err := client.Dial(ctx, srv.Addr)
				if err != nil {
					return err
				}
				t1 := time.Now()
				v, err := c.Get(ctx, key)
				t2 := time.Now()
				if cerr := c.Close(); err == nil {
					err = cerr
				}
				ph.record(t0, t1, t2, time.Now())
				if err == nil && len(v) != len(val) {
					err = fmt.Errorf("GET returned %d bytes, want %d", len(v), len(val))
				}
				return err
			})
			ph.report(b)
		})
	}
	b.Run("unix-floor", func(b *testing.B) {
		if !slices.Contains(e2eFabrics(), "shm") {
			b.Skip("no shm join here to set beside the socket floor")
		}
		path := startSocketFloor(b)
		buf := make([]byte, floorMsg+1)
		p["unix-floor"] = timeJoins(b, func() error { return socketFloorJoin(path, buf) })
	})
	b.Run("memcached", func(b *testing.B) {
		mc := startMemcached(b)
		if _, err := mc.roundTrip(fmt.Sprintf("set %s 0 0 %d\r\n%s\r\n", key, len(val), val)); err != nil {
			b.Fatal(err)
		}
		addr := mc.conn.RemoteAddr().String()
		buf := make([]byte, 0, 256)
		p["memcached"] = timeJoins(b, func() error {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				return err
			}
			defer conn.Close()
			buf = fmt.Appendf(buf[:0], "get %s\r\n", key)
			if _, err := conn.Write(buf); err != nil {
				return err
			}
			r := bufio.NewReader(conn)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return err
				}
				if strings.TrimSpace(line) == "END" {
					return nil
				}
			}
		})
	})
	if f, s := p["unix-floor"], p["shm"]; f[0] > 0 && s[0] > 0 {
		b.Logf("join shm: p50 %.1f µs = %.2fx the socket floor's %.1f (one unix SEQPACKET exchange with another process), p99 %.1f µs = %.2fx its %.1f",
			s[0], s[0]/f[0], f[0], s[1], s[1]/f[1], f[1])
	}
	if m := p["memcached"]; m[0] > 0 {
		for _, fab := range e2eFabrics() {
			if v := p[fab]; v[0] > 0 {
				b.Logf("join (Dial + GET + Close) %s: p50 %.1f µs = %.2fx memcached's %.1f, p99 %.1f µs = %.2fx memcached's %.1f",
					fab, v[0], v[0]/m[0], m[0], v[1], v[1]/m[1], m[1])
			}
		}
	}
}

// timeJoins runs join b.N times and reports its p50 and p99 in µs, which
// it returns.
func timeJoins(b *testing.B, join func() error) [2]float64 {
	h := newJoinHist()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := join(); err != nil {
			b.Fatalf("join %d: %v", i, err)
		}
		h.RecordValue(int64(time.Since(t0)))
	}
	b.StopTimer()
	q := [2]float64{float64(h.ValueAtQuantile(50)) / 1e3, float64(h.ValueAtQuantile(99)) / 1e3}
	b.ReportMetric(q[0], "p50-µs")
	b.ReportMetric(q[1], "p99-µs")
	return q
}

// newJoinHist holds join times of up to 10 s, in nanoseconds.
func newJoinHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, int64(10*time.Second), 3) }

// joinPhases splits a join into its steps: Dial (the handshake and the
// client's set-up), the first GET (the server's partition finding a new
// client; compare BenchmarkLatency's warm GET) and Close, so a change
// that moves one of them shows which.
type joinPhases struct{ dial, get, close *hdrhistogram.Histogram }

func (ph *joinPhases) record(t0, t1, t2, t3 time.Time) {
	if ph.dial == nil {
		ph.dial, ph.get, ph.close = newJoinHist(), newJoinHist(), newJoinHist()
	}
	ph.dial.RecordValue(int64(t1.Sub(t0)))
	ph.get.RecordValue(int64(t2.Sub(t1)))
	ph.close.RecordValue(int64(t3.Sub(t2)))
}

// report adds the steps' medians to the benchmark's metrics.
func (ph *joinPhases) report(b *testing.B) {
	if ph.dial == nil {
		return
	}
	b.ReportMetric(float64(ph.dial.ValueAtQuantile(50))/1e3, "dial-p50-µs")
	b.ReportMetric(float64(ph.get.ValueAtQuantile(50))/1e3, "get1-p50-µs")
	b.ReportMetric(float64(ph.close.ValueAtQuantile(50))/1e3, "close-p50-µs")
}
