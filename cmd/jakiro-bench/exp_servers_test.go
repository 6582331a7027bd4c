package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestServersExperiment runs the servers experiment's plumbing, tiny:
// three server processes on loopback tcp, 1-3 servers x 3 rounds, CSV
// rows with the median inside min-max, and the PNG.
func TestServersExperiment(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	e := &env{Ctx: ctx, Out: out, Duration: 100 * time.Millisecond, Warmup: 30 * time.Millisecond, Keys: 300,
		Partitions: 1, Quick: true, M: getMachineInfo(), Log: testWriter{t}}
	if err := runServers(e); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(out, "servers.csv"))
	if len(rows) != 3 {
		t.Fatalf("servers.csv has %d rows, want 3", len(rows))
	}
	for i, r := range rows {
		if r[1] != strconv.Itoa(i+1) || r[4] != "3" {
			t.Errorf("row %v: want %d servers, 3 rounds", r, i+1)
		}
		med, _ := strconv.ParseFloat(r[5], 64)
		lo, _ := strconv.ParseFloat(r[6], 64)
		hi, _ := strconv.ParseFloat(r[7], 64)
		if lo > med || med > hi {
			t.Errorf("row %v: median %v outside min-max %v-%v", r, med, lo, hi)
		}
	}
	if st, err := os.Stat(filepath.Join(out, "servers.png")); err != nil || st.Size() == 0 {
		t.Fatalf("servers.png: %v", err)
	}
}
