package main

import (
	"bufio"
	"context"
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseFabrics(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		bad  bool
	}{
		{"", nil, false},
		{" ", nil, false},
		{"shm", []string{"shm"}, false},
		{"tcp,shm", []string{"tcp", "shm"}, false},
		{" shm , tcp ", []string{"shm", "tcp"}, false},
		{"rdma", nil, true},
		{"shm,shm", nil, true},
		{"shm,", nil, true},
		{"SHM", nil, true},
	} {
		got, err := parseFabrics(tc.in)
		if (err != nil) != tc.bad {
			t.Errorf("parseFabrics(%q): error %v, want error %v", tc.in, err, tc.bad)
			continue
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("parseFabrics(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6} // 1..10, shuffled
	for q, want := range map[float64]float64{50: 5, 90: 9, 99: 10, 100: 10, 10: 1, 1: 1} {
		if got := percentile(xs, q); got != want {
			t.Errorf("percentile(1..10, %v) = %v, want %v", q, got, want)
		}
	}
	if xs[0] != 5 {
		t.Error("percentile sorted its input in place")
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile of nothing = %v", got)
	}
}

// TestBurstStats: times from the children's instants, errors counted and
// left out of the times.
func TestBurstStats(t *testing.T) {
	const ms = int64(time.Millisecond)
	rel := int64(1_000_000_000_000)
	b := burstResult{Release: rel, Results: []joinChildResult{
		{Start: rel + 1*ms, Answer: rel + 3*ms, Closed: rel + 4*ms},   // join 2 ms, close 1 ms
		{Start: rel + 2*ms, Answer: rel + 10*ms, Closed: rel + 12*ms}, // join 8 ms, close 2 ms
		{Start: rel, Answer: rel + 1*ms, Closed: rel + 20*ms},         // join 1 ms, close 19 ms
		{Start: rel + 5*ms, Err: "dial: refused"},                     // an error
		{Start: rel + 5*ms, Answer: rel + 99*ms, Closed: rel + 99*ms, Err: "GET: 3 bytes, want 32"},
	}}
	s := b.stats()
	if s.N != 5 || s.Errors != 2 || s.FirstErr != "dial: refused" {
		t.Fatalf("N %d, errors %d (%q), want 5, 2, the first error", s.N, s.Errors, s.FirstErr)
	}
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("JoinP50", s.JoinP50, 2000)
	near("JoinP99", s.JoinP99, 8000)
	near("CloseP50", s.CloseP50, 2000)
	near("AllAnswered", s.AllAnswered, 10)
	near("AllClosed", s.AllClosed, 20)
	near("LateStart", s.LateStart, 2)
	near("MaxJoin", s.MaxJoin, 8)
	if s.LastClosed != rel+20*ms {
		t.Errorf("LastClosed %d, want %d", s.LastClosed, rel+20*ms)
	}
	if s := (burstResult{Release: rel, Results: []joinChildResult{{Err: "x"}}}).stats(); s.Errors != 1 || s.JoinP50 != 0 || s.AllAnswered != 0 {
		t.Errorf("all failed: %+v", s)
	}
}

func TestRateIn(t *testing.T) {
	// 1000 ops per ms for 10 ms, then none for 10 ms.
	ss := []rateSample{{0, 0}, {5e6, 5000}, {10e6, 10000}, {20e6, 10000}}
	for _, tc := range []struct {
		a, b int64
		want float64
	}{
		{0, 10e6, 1e6},
		{1e6, 4e6, 1e6}, // inside one interval: interpolated
		{10e6, 20e6, 0}, // stalled
		{5e6, 15e6, 5e5},
		{0, 20e6, 5e5},
		{-1, 10e6, 0}, // before the first sample: not covered
		{0, 21e6, 0},  // after the last
		{5e6, 5e6, 0}, // empty window
	} {
		if got := rateIn(ss, tc.a, tc.b); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("rateIn(%d, %d) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	if got := rateIn(ss[:1], 0, 0); got != 0 {
		t.Errorf("one sample: %v", got)
	}
}

func TestReadMemcachedValue(t *testing.T) {
	for _, tc := range []struct {
		answer string
		ok     bool
	}{
		{"VALUE k1 0 5\r\nhello\r\nEND\r\n", true},
		{"VALUE k1 7 5\r\nhello\r\nEND\r\n", true},
		{"END\r\n", false},                           // a miss
		{"VALUE k2 0 5\r\nhello\r\nEND\r\n", false},  // another key
		{"VALUE k1 0 4\r\nhell\r\nEND\r\n", false},   // another size
		{"VALUE k1 0 5\r\nhello\r\nVALUE", false},    // no END
		{"VALUE k1 0 5\r\nhel", false},               // cut short
		{"SERVER_ERROR out of memory\r\n", false},    // an error
		{"VALUE k1 0 5\r\nhello\r\nEND\r\nx", true},  // trailing bytes are the next answer's
		{"VALUE k1 0 5\r\nhello\r\nENDS\r\n", false}, // not END
	} {
		err := readMemcachedValue(bufio.NewReader(strings.NewReader(tc.answer)), "k1", 5)
		if (err == nil) != tc.ok {
			t.Errorf("%q: error %v, want ok %v", tc.answer, err, tc.ok)
		}
	}
}

// TestJoinTable: medians and their spread, ratios to memcached's medians,
// the established client's columns on its row only, and a missing
// memcached leaving the ratios empty.
func TestJoinTable(t *testing.T) {
	e := &env{Keys: 100, Warmup: time.Millisecond, Duration: time.Millisecond, Reps: 3}
	js := func(p50, p99, cpu, alone, during float64) joinSample {
		return joinSample{burstStats: burstStats{N: 8, JoinP50: p50, JoinP99: p99, AllAnswered: p99 / 1e3}, ServerCPU: cpu, Alone: alone, During: during}
	}
	samples := map[[2]string][]joinSample{
		{joinJakiro, "shm"}:     {js(300, 900, 50, 0, 0), js(100, 1000, 40, 0, 0), js(200, 800, 60, 0, 0)},
		{joinWithClient, "shm"}: {js(400, 1200, 0, 1000, 900), js(500, 1500, 0, 1000, 500), js(600, 1800, 0, 1000, 800)},
		{joinMemcached, "tcp"}:  {js(50, 100, 10, 0, 0), js(40, 200, 11, 0, 0), js(60, 300, 12, 0, 0)},
	}
	tb := joinTable(e, 8, []string{"shm"}, samples, "memcached: test")
	if len(tb.Rows) != 3 {
		t.Fatalf("%d rows, want 3: %v", len(tb.Rows), tb.Rows)
	}
	col := map[string]int{}
	for i, c := range tb.Cols {
		col[c] = i
	}
	for _, r := range tb.Rows {
		if len(r) != len(tb.Cols) {
			t.Fatalf("row %v: %d cells, %d columns", r, len(r), len(tb.Cols))
		}
	}
	get := func(row int, c string) string { return tb.Rows[row][col[c]] }
	for _, tc := range []struct {
		row       int
		col, want string
	}{
		{0, "system", joinJakiro},
		{0, "join_p50_us", "200.0000"},
		{0, "join_p50_us_min", "100.0000"},
		{0, "join_p50_us_max", "300.0000"},
		{0, "join_p99_us", "900.0000"},
		{0, "server_cpu_us_per_join", "50.0000"},
		{0, "p50_vs_memcached", "4.00"}, // 200 / 50
		{0, "p99_vs_memcached", "4.50"}, // 900 / 200
		{0, "client_during_vs_alone", ""},
		{1, "system", joinWithClient},
		{1, "server_cpu_us_per_join", ""},
		{1, "client_alone_ops_per_sec", "1000.0000"},
		{1, "client_during_ops_per_sec", "800.0000"},
		{1, "client_during_vs_alone", "0.8000"},
		{1, "client_during_vs_alone_min", "0.5000"},
		{1, "client_during_vs_alone_max", "0.9000"},
		{2, "system", joinMemcached},
		{2, "fabric", "tcp"},
		{2, "p50_vs_memcached", ""},
		{2, "reps", "3"},
	} {
		if got := get(tc.row, tc.col); got != tc.want {
			t.Errorf("row %d %s = %q, want %q", tc.row, tc.col, got, tc.want)
		}
	}
	delete(samples, [2]string{joinMemcached, "tcp"})
	tb = joinTable(e, 8, []string{"shm"}, samples, "memcached: skipped")
	if len(tb.Rows) != 2 || tb.Rows[0][col["p50_vs_memcached"]] != "" {
		t.Errorf("without memcached: %v", tb.Rows)
	}
}

// TestJoinExperiment runs the join experiment end to end, tiny: a server
// on shm, bursts of 4 child processes, an established client, memcached
// where installed; CSV + PNG.
func TestJoinExperiment(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := &env{Ctx: ctx, Out: out, Duration: 100 * time.Millisecond, Warmup: 20 * time.Millisecond, Keys: 200,
		Reps: 1, JoinProcs: 4, M: getMachineInfo(), Log: testWriter{t}}
	if err := runJoin(e); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(out, "join.csv"))
	want := 2
	if _, err := exec.LookPath("memcached"); err == nil {
		want = 3
	} else {
		t.Log("memcached not installed: its row is skipped")
	}
	if len(rows) != want {
		t.Fatalf("join.csv has %d rows, want %d: %v", len(rows), want, rows)
	}
	for _, r := range rows {
		if r[2] != "4" {
			t.Errorf("row %v: procs %s, want 4", r, r[2])
		}
		if p50, err := strconv.ParseFloat(r[4], 64); err != nil || p50 <= 0 {
			t.Errorf("row %v: join p50 %q", r, r[4])
		}
	}
	if alone, err := strconv.ParseFloat(rows[1][22], 64); err != nil || alone <= 0 {
		t.Errorf("established client alone: %q", rows[1][22])
	}
	e.Addr = "shm:///nowhere"
	if err := runJoin(e); err == nil {
		t.Error("join with --addr: no error")
	}
}
