package main

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
)

// Servers under test are this test binary, re-executed.
func TestMain(m *testing.M) {
	fabricbench.ServeChildIfRequested()
	serveChildIfRequested()
	loadChildIfRequested()
	joinChildIfRequested()
	joinSpawnerIfRequested()
	holdIdleIfRequested()
	hogIfRequested()
	os.Exit(m.Run())
}

// readCSV returns a results file's data rows (after the '#' block and
// the column header) and checks the machine block is there.
func readCSV(t *testing.T, path string) [][]string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# host: ", "# cpu: ", "# cores: ", "# client_gomaxprocs: ", "# go: ", "# date: ", "# server: "} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q", path, want)
		}
	}
	r := csv.NewReader(strings.NewReader(string(b)))
	r.Comment = '#'
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 1 {
		t.Fatalf("%s: no header", path)
	}
	return rows[1:]
}

// TestClientsExperiment runs the clients experiment's plumbing end to end,
// tiny: a server process, a preload, 2 client counts x 3 modes, CSV + PNG.
func TestClientsExperiment(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := &env{Ctx: ctx, Out: out, Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond, Keys: 500,
		Partitions: 1, Quick: true, M: getMachineInfo(), Log: testWriter{t}}
	if err := runClients(e); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(out, "clients.csv"))
	if len(rows) != 6 {
		t.Fatalf("clients.csv has %d rows, want 6", len(rows))
	}
	// A busy machine can starve a single point; all of them starving
	// means the plumbing is broken.
	measured := 0
	for _, r := range rows {
		if len(r) != 3+len(repCols)+len(loadCols) {
			t.Fatalf("row %v has %d columns", r, len(r))
		}
		if r[3+len(repCols)] != "0.0000" {
			measured++
		}
	}
	if measured == 0 {
		t.Fatalf("no point measured anything: %v", rows)
	}
	if st, err := os.Stat(filepath.Join(out, "clients.png")); err != nil || st.Size() == 0 {
		t.Fatalf("clients.png: %v", err)
	}
}

// TestIdleExperiment runs the idle-connections experiment's plumbing,
// tiny: 0 and 100 idle shm clients, two repetitions, CSV + PNG.
func TestIdleExperiment(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := &env{Ctx: ctx, Out: out, Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond, Keys: 500,
		Partitions: 1, Quick: true, Reps: 2, M: getMachineInfo(), Log: testWriter{t}}
	if err := runIdle(e); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(out, "idle.csv"))
	if len(rows) != 2 || rows[0][1] != "0" || rows[1][1] != "100" || rows[0][2] != "2" {
		t.Fatalf("idle.csv rows: %v", rows)
	}
}

func TestSpread(t *testing.T) {
	if s := spreadOf([]float64{3, 1, 2}); s.Med != 2 || s.Min != 1 || s.Max != 3 || s.N != 3 {
		t.Fatalf("%+v", s)
	}
	if s := spreadOf([]float64{4, 1, 2, 3}); s.Med != 2.5 {
		t.Fatalf("even count: %+v", s)
	}
}

func TestLoadProps(t *testing.T) {
	p, err := loadProps([]string{"../../workloads/paper-uniform"}, []string{"jakiro.mode=reply", "table=t=1"})
	if err != nil {
		t.Fatal(err)
	}
	if p.GetString("jakiro.mode", "") != "reply" || p.GetInt("fieldlength", 0) != 32 || p.GetString("table", "") != "t=1" {
		t.Fatalf("props: %v", p.Map())
	}
	if _, err := loadProps(nil, []string{"novalue"}); err == nil {
		t.Fatal("property without = accepted")
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func TestParseYCSBArgs(t *testing.T) {
	a, err := parseYCSBArgs([]string{"jakiro", "-P", "w", "-p", "a=b", "--threads=3", "-p=c=d", "--duration", "2s"})
	if err != nil || a.db != "jakiro" || len(a.files) != 1 || len(a.props) != 2 || a.props[1] != "c=d" || a.threads != 3 || a.duration != 2*time.Second {
		t.Fatalf("%+v %v", a, err)
	}
	for _, bad := range [][]string{{}, {"a", "b"}, {"jakiro", "-P"}, {"jakiro", "--nope", "1"}, {"jakiro", "--threads", "x"}} {
		if _, err := parseYCSBArgs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
