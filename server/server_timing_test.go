package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
	"github.com/jakiro-kv/jakiro/rfp"
)

const benchWindow = 8

// BenchmarkGet runs, in one process tree and one after another, on each
// fabric: the raw fabric round trip (a 32 B WRITE and a 40 B READ back,
// window 8, no server CPU involved: the fabric work of one GET), the raw
// echo round trip (the same through a target goroutine that copies each
// request into its response slot: a request/response with nothing of RFP),
// then
// pipelined GETs (16 B keys, 32 B values, uniform) in every mode at the
// same window against a one-partition server process, and prints each
// mode's ratio to both baselines.
func BenchmarkGet(b *testing.B) {
	for _, fab := range e2eFabrics() {
		b.Run(fab, func(b *testing.B) {
			rates := map[string]float64{}
			b.Run("raw", func(b *testing.B) { rates["raw"] = benchRaw(b, fab) })
			b.Run("echo", func(b *testing.B) { rates["echo"] = benchEcho(b, fab) })
			srv := startServer(b, e2eListenTB(b, fab), "JAKIRO_E2E_PARTITIONS=1")
			for _, m := range modes {
				b.Run(m.String(), func(b *testing.B) { rates[m.String()] = benchGets(b, srv.Addr, m) })
			}
			if raw, echo := rates["raw"], rates["echo"]; raw > 0 && echo > 0 {
				var sb strings.Builder
				for _, m := range modes {
					fmt.Fprintf(&sb, " %s/raw=%.3f %s/echo=%.2f", m, rates[m.String()]/raw, m, rates[m.String()]/echo)
				}
				b.Logf("%s: raw WRITE+READ %.3f M/s, echo through the target CPU %.3f M/s;%s", fab, raw, echo, sb.String())
			}
		})
	}
}

// rawAddr is a listen address for the raw target, known before it starts.
func rawAddr(b *testing.B, fab string) string {
	switch fab {
	case "rdma":
		return "rdma://192.168.77.1:7471"
	case "tcp":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		return "tcp://" + l.Addr().String()
	}
	return "shm://" + filepath.Join(b.TempDir(), "raw.sock")
}

// benchRaw measures WRITE+READ round trips per second (in millions).
func benchRaw(b *testing.B, fab string) float64 {
	addr := rawAddr(b, fab)
	tgt, err := fabricbench.StartServer(addr, 1<<16, "-test.run=^$")
	if err != nil {
		b.Fatal(err)
	}
	defer tgt.Stop()
	conn, remote, local := dialTarget(b, addr)
	defer conn.Close()
	ops := make([]fabric.Op, 0, 2*benchWindow)
	pair := func(w int) {
		off := w * 128
		ops = append(ops,
			fabric.Op{Kind: fabric.OpWrite, ID: uint64(2 * w), Local: local, LocalOff: off, Len: 32, Remote: remote, RemoteOff: uint64(off)},
			fabric.Op{Kind: fabric.OpRead, ID: uint64(2*w + 1), Local: local, LocalOff: off + 64, Len: rfp.RFSFor(32), Remote: remote, RemoteOff: uint64(off + 64)})
	}
	b.ResetTimer()
	start := time.Now()
	// Keep benchWindow round trips in flight: each finished one (its READ
	// completes) is replaced at once, as the RFP client does with its slots.
	posted, done := 0, 0
	for w := 0; w < benchWindow && posted < b.N; w++ {
		pair(w)
		posted++
	}
	pump(b, conn, &ops, func(c fabric.Completion) {
		if c.Kind == fabric.OpRead {
			done++
			if posted < b.N {
				pair(int(c.ID / 2))
				posted++
			}
		}
	}, func() bool { return done >= b.N })
	el := time.Since(start)
	rate := float64(b.N) / el.Seconds() / 1e6
	b.ReportMetric(rate, "Mrt/s")
	return rate
}

// loadKeys stores n 16-byte keys with 32-byte values.
func loadKeys(b *testing.B, c *client.Client, n int) [][]byte {
	ctx := context.Background()
	keys := make([][]byte, n)
	var batch client.Batch
	val := make([]byte, 32)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key%013d", i)) // 16 B
		batch.Put(keys[i], val, 0)
		if batch.Len() == 256 || i == n-1 {
			if err := c.Run(ctx, &batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	return keys
}

func benchGets(b *testing.B, addr string, m rfp.Mode) float64 {
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, client.WithMode(m), client.WithWindow(benchWindow))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	keys := loadKeys(b, c, scale(100000))
	var batch client.Batch
	before := c.Counters()
	per := 32 * benchWindow * c.Partitions() // long batches keep the window full
	b.ResetTimer()
	for i := 0; i < b.N; i += per {
		batch.Reset()
		for j := 0; j < per; j++ {
			batch.Get(keys[(i+j)*7919%len(keys)])
		}
		if err := c.Run(ctx, &batch); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	d := c.Counters().Sub(before)
	rate := float64(d.Ops) / b.Elapsed().Seconds() / 1e6
	b.ReportMetric(rate, "Mops")
	b.ReportMetric(d.FabricOpsPerOp(), "fabricops/op")
	b.ReportMetric(float64(d.NotReady)/float64(d.Ops), "retries/op")
	b.ReportMetric(d.RingsPerOp(), "rings/op")
	return rate
}

// BenchmarkGetCrowded: more waiting clients than Ps, as go-ycsb runs
// them: 4 goroutines with a client each on GOMAXPROCS 1, batches of 8
// GETs. A waiter yields its core at every spin then, so its retry READs
// come late; the fetch delay must still learn from its misses
// (retries/op stays near the one-client figure, not ~1).
func BenchmarkGetCrowded(b *testing.B) {
	const clients, batchLen = 4, 8
	for _, fab := range e2eFabrics() {
		b.Run(fab, func(b *testing.B) {
			srv := startServer(b, e2eListenTB(b, fab), "JAKIRO_E2E_PARTITIONS=1")
			ctx := context.Background()
			cs := make([]*client.Client, clients)
			for i := range cs {
				c, err := client.Dial(ctx, srv.Addr)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				cs[i] = c
			}
			keys := loadKeys(b, cs[0], scale(100000))
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			var before rfp.Counters
			for _, c := range cs {
				before = before.Add(c.Counters())
			}
			b.ResetTimer()
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for g, c := range cs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var batch client.Batch
					for i := g * batchLen; i < b.N; i += clients * batchLen {
						batch.Reset()
						for j := 0; j < batchLen; j++ {
							batch.Get(keys[(i+j)*7919%len(keys)])
						}
						if err := c.Run(ctx, &batch); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
			var after rfp.Counters
			for _, c := range cs {
				after = after.Add(c.Counters())
			}
			d := after.Sub(before)
			b.ReportMetric(float64(d.Ops)/b.Elapsed().Seconds()/1e6, "Mops")
			b.ReportMetric(d.FabricOpsPerOp(), "fabricops/op")
			b.ReportMetric(float64(d.NotReady)/float64(d.Ops), "retries/op")
		})
	}
}

// BenchmarkLatency: one GET at a time (window 1), each mode; reports the
// median and 99th percentile from an HdrHistogram.
func BenchmarkLatency(b *testing.B) {
	for _, fab := range e2eFabrics() {
		b.Run(fab, func(b *testing.B) {
			srv := startServer(b, e2eListenTB(b, fab), "JAKIRO_E2E_PARTITIONS=1")
			for _, m := range modes {
				b.Run(m.String(), func(b *testing.B) {
					ctx := context.Background()
					c, err := client.Dial(ctx, srv.Addr, client.WithMode(m))
					if err != nil {
						b.Fatal(err)
					}
					defer c.Close()
					keys := loadKeys(b, c, 1000)
					h := hdrhistogram.New(1, int64(time.Second/time.Nanosecond), 3)
					var dst []byte
					b.ResetTimer()
					before := c.Counters()
					for i := 0; i < b.N; i++ {
						t0 := time.Now()
						if dst, err = c.GetTo(ctx, keys[i%len(keys)], dst[:0]); err != nil {
							b.Fatal(err)
						}
						h.RecordValue(int64(time.Since(t0)))
					}
					d := c.Counters().Sub(before)
					b.ReportMetric(float64(h.ValueAtQuantile(50))/1e3, "p50-µs")
					b.ReportMetric(float64(h.ValueAtQuantile(99))/1e3, "p99-µs")
					// The client's WRITEs and READs per GET, one at a time:
					// the paper's 2 round trips (rfp's bar on tcp and rdma is
					// 2.01); replies are the server's.
					b.ReportMetric(d.FabricOpsPerOp(), "fabricops/op")
					b.ReportMetric(float64(d.NotReady)/float64(max(d.Ops, 1)), "retries/op")
				})
			}
		})
	}
}

// BenchmarkIdleWakeup: one GET at a time against a server whose partitions
// have gone idle (blocked on their doorbells, or dozing where the fabric
// has none), then the same GET warm; and the same against memcached (one
// thread, loopback, its text protocol) when it is installed, in the same
// run. Reports the idle and warm latencies: the difference is the
// wake-up cost a client pays after a quiet spell.
func BenchmarkIdleWakeup(b *testing.B) {
	p50 := map[string]float64{}
	for _, fab := range e2eFabrics() {
		b.Run(fab, func(b *testing.B) {
			srv := startServer(b, e2eListenTB(b, fab), "JAKIRO_E2E_PARTITIONS=1", "JAKIRO_E2E_IDLE="+os.Getenv("JAKIRO_BENCH_IDLE"), "JAKIRO_E2E_DOZE_NS="+os.Getenv("JAKIRO_BENCH_DOZE_NS"))
			ctx := context.Background()
			c, err := client.Dial(ctx, srv.Addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			key := []byte("wakeup-key-00001")
			if err := c.Put(ctx, key, make([]byte, 32), 0); err != nil {
				b.Fatal(err)
			}
			var dst []byte
			rings := c.Counters().Rings
			idle, warm := idleThenWarm(b, func() error {
				dst, err = c.GetTo(ctx, key, dst[:0])
				return err
			})
			p50[fab] = idle
			b.ReportMetric(float64(c.Counters().Rings-rings)/float64(b.N), "rings/idle-get")
			b.ReportMetric(float64(c.FetchDelay().Nanoseconds()), "fetch-delay-ns")
			_ = warm
		})
	}
	b.Run("memcached", func(b *testing.B) {
		mc := startMemcached(b)
		if _, err := mc.roundTrip("set wakeup-key-00001 0 0 32\r\n" + strings.Repeat("v", 32) + "\r\n"); err != nil {
			b.Fatal(err)
		}
		p50["memcached"], _ = idleThenWarm(b, func() error {
			_, err := mc.roundTrip("get wakeup-key-00001\r\n")
			return err
		})
	})
	if m := p50["memcached"]; m > 0 {
		for _, fab := range e2eFabrics() {
			if v := p50[fab]; v > 0 {
				b.Logf("idle GET p50: jakiro %s %.1f µs, memcached %.1f µs: %.2fx", fab, v, m, v/m)
			}
		}
	}
}

// idleThenWarm times get after 2 ms of quiet, then again at once, b.N
// times, and reports both; it returns the idle and warm medians in µs.
func idleThenWarm(b *testing.B, get func() error) (float64, float64) {
	idle := hdrhistogram.New(1, int64(time.Second), 3)
	warm := hdrhistogram.New(1, int64(time.Second), 3)
	for i := 0; i < b.N; i++ {
		time.Sleep(2 * time.Millisecond) // past the server's idle spin
		t0 := time.Now()
		if err := get(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := get(); err != nil {
			b.Fatal(err)
		}
		idle.RecordValue(int64(t1.Sub(t0)))
		warm.RecordValue(int64(time.Since(t1)))
	}
	ip50, wp50 := float64(idle.ValueAtQuantile(50))/1e3, float64(warm.ValueAtQuantile(50))/1e3
	b.ReportMetric(ip50, "idle-p50-µs")
	b.ReportMetric(float64(idle.ValueAtQuantile(99))/1e3, "idle-p99-µs")
	b.ReportMetric(wp50, "warm-p50-µs")
	return ip50, wp50
}

// memcached is a memcached process on loopback and one connection to it.
type memcached struct {
	conn net.Conn
	r    *bufio.Reader
}

// startMemcached starts memcached with one worker thread, as the Jakiro
// server runs one partition here; it skips the benchmark when memcached
// is not installed.
func startMemcached(b *testing.B) *memcached {
	bin, err := exec.LookPath("memcached")
	if err != nil {
		b.Skip("memcached not installed (apt-get install memcached): no comparison")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	args := []string{"-l", "127.0.0.1", "-p", port, "-U", "0", "-t", "1", "-m", "64"}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "nobody") // memcached refuses to run as root
	}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var conn net.Conn
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if conn, err = net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("memcached not listening after 10s: %v", err)
		}
	}
	b.Cleanup(func() { conn.Close() })
	return &memcached{conn: conn, r: bufio.NewReader(conn)}
}

// roundTrip sends one command and reads its reply up to END, STORED or an
// error line.
func (m *memcached) roundTrip(cmd string) (string, error) {
	if _, err := m.conn.Write([]byte(cmd)); err != nil {
		return "", err
	}
	var sb strings.Builder
	for {
		line, err := m.r.ReadString('\n')
		if err != nil {
			return "", err
		}
		sb.WriteString(line)
		switch strings.TrimSpace(line) {
		case "END", "STORED":
			return sb.String(), nil
		case "ERROR":
			return "", fmt.Errorf("memcached: %s", sb.String())
		}
	}
}

// dialTarget connects to a raw target (fabricbench's or the echo child)
// whose accept data is the Desc of the region it grants, and registers a
// local region of the same size.
func dialTarget(b *testing.B, addr string) (fabric.Conn, fabric.Desc, *fabric.Region) {
	ctx := context.Background()
	setup, err := fabric.Dial(ctx, addr, fabric.Options{})
	if err != nil {
		b.Fatal(err)
	}
	conn, err := setup.Establish(ctx, nil)
	if err != nil {
		setup.Close()
		b.Fatal(err)
	}
	remote, err := fabric.ParseDesc(conn.PeerData())
	if err != nil {
		conn.Close()
		b.Fatal(err)
	}
	local, err := conn.Alloc(int(remote.Len))
	if err != nil {
		conn.Close()
		b.Fatal(err)
	}
	return conn, remote, local
}

// pump posts what the handlers queue in *ops and hands every completion to
// handle until done, failing on any error or after two minutes.
func pump(b *testing.B, conn fabric.Conn, ops *[]fabric.Op, handle func(fabric.Completion), done func() bool) {
	cs := make([]fabric.Completion, 64)
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; !done(); i++ {
		if len(*ops) > 0 {
			if err := conn.Post(*ops); err != nil {
				b.Fatal(err)
			}
			*ops = (*ops)[:0]
		}
		n, err := conn.Poll(cs)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range cs[:n] {
			if c.Err != nil {
				b.Fatal(c.Err)
			}
			handle(c)
		}
		if i&4095 == 0 && time.Now().After(deadline) {
			b.Fatal("benchmark stuck for two minutes")
		}
	}
}
