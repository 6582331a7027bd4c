package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestOneByOneTable: per fabric the echo floor first, then each mode;
// medians with their spread, and p50 over the echo floor's median.
func TestOneByOneTable(t *testing.T) {
	e := &env{Keys: 100, Warmup: time.Millisecond, Duration: time.Millisecond, Reps: 3}
	s := func(p50, p99 float64) oneByOneSample {
		return oneByOneSample{P50: p50, P99: p99, Ops: 1000, FabricOps: 2}
	}
	samples := map[[2]string][]oneByOneSample{
		{"shm", onebyoneEcho}: {s(0.3, 0.5), s(0.4, 0.6), s(0.5, 0.9)},
		{"shm", "auto"}:       {s(0.9, 2), s(0.8, 1), s(0.7, 3)},
		{"shm", "reply"}:      {s(1.2, 2), s(1.2, 2), s(1.2, 2)},
		{"tcp", "rfp"}:        {s(30, 100)}, // no echo floor measured: no ratio
	}
	tb := oneByOneTable(e, []string{"shm", "tcp"}, samples)
	want := [][]string{
		{"shm", "echo", "3", "0.4000", "0.3000", "0.5000", "0.6000", "0.5000", "0.9000", "1000", "2.0000", "0.0000", "0.4000", "1.00"},
		{"shm", "auto", "3", "0.8000", "0.7000", "0.9000", "2.0000", "1.0000", "3.0000", "1000", "2.0000", "0.0000", "0.4000", "2.00"},
		{"shm", "reply", "3", "1.2000", "1.2000", "1.2000", "2.0000", "2.0000", "2.0000", "1000", "2.0000", "0.0000", "0.4000", "3.00"},
		{"tcp", "rfp", "1", "30.0000", "30.0000", "30.0000", "100.0000", "100.0000", "100.0000", "1000", "2.0000", "0.0000", "0.0000", ""},
	}
	if len(tb.Rows) != len(want) {
		t.Fatalf("rows %v, want %v", tb.Rows, want)
	}
	for i, r := range tb.Rows {
		if len(r) != len(tb.Cols) {
			t.Fatalf("row %v: %d cells, %d columns", r, len(r), len(tb.Cols))
		}
		for j := range r {
			if r[j] != want[i][j] {
				t.Errorf("row %d %s = %q, want %q", i, tb.Cols[j], r[j], want[i][j])
			}
		}
	}
}

func TestTimeOneByOne(t *testing.T) {
	calls, marked := 0, -1
	p50, p99, n, err := timeOneByOne(context.Background(), 5*time.Millisecond, 10*time.Millisecond,
		func() { marked = calls }, func() error { calls++; time.Sleep(100 * time.Microsecond); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if marked <= 0 || int64(calls-marked) != n {
		t.Errorf("%d calls, measuring after %d, %d timed", calls, marked, n)
	}
	if p50 < 100 || p99 < p50 {
		t.Errorf("p50 %.1f µs, p99 %.1f µs: a call sleeps 100 µs", p50, p99)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, _, err := timeOneByOne(ctx, 0, time.Minute, nil, func() error { return nil }); err == nil {
		t.Error("a cancelled context did not end the measurement")
	}
}

// TestOneByOneExperiment runs the onebyone experiment end to end, tiny:
// a server and an echo target on shm, one repetition, CSV + PNG.
func TestOneByOneExperiment(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := &env{Ctx: ctx, Out: out, Duration: 100 * time.Millisecond, Warmup: 20 * time.Millisecond, Keys: 200,
		Reps: 1, Fabrics: []string{"shm"}, M: getMachineInfo(), Log: testWriter{t}}
	if err := runOneByOne(e); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(out, "onebyone.csv"))
	if len(rows) != 1+len(onebyoneModes) {
		t.Fatalf("onebyone.csv has %d rows, want %d: %v", len(rows), 1+len(onebyoneModes), rows)
	}
	for _, r := range rows {
		if p50, err := strconv.ParseFloat(r[3], 64); err != nil || p50 <= 0 {
			t.Errorf("row %v: p50 %q", r, r[3])
		}
		if _, err := strconv.ParseFloat(r[len(r)-1], 64); err != nil {
			t.Errorf("row %v: no ratio to the echo floor", r)
		}
	}
	if st, err := os.Stat(filepath.Join(out, "onebyone.png")); err != nil || st.Size() == 0 {
		t.Fatalf("onebyone.png: %v", err)
	}
}
