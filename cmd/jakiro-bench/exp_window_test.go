package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestWindowExperiment runs the window experiment's plumbing, tiny: shm
// and tcp servers with 64 slots, rfp and reply at the quick windows, CSV
// rows with fabric operations per GET, and the PNG.
func TestWindowExperiment(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := &env{Ctx: ctx, Out: out, Duration: 100 * time.Millisecond, Warmup: 30 * time.Millisecond, Keys: 500,
		Partitions: 1, Quick: true, Reps: 1, M: getMachineInfo(), Log: testWriter{t}}
	if err := runWindow(e); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(out, "window.csv"))
	if len(rows) != 2*2*4 {
		t.Fatalf("window.csv has %d rows, want 16", len(rows))
	}
	for _, r := range rows {
		if len(r) != 3+len(repCols)+5+len(loadCols) {
			t.Fatalf("row %v has %d columns", r, len(r))
		}
		// The GETs of one batch go out in one WRITE (two where the ring
		// wraps): 1/window to 2/window WRITEs per GET, whatever the load.
		w, _ := strconv.ParseFloat(r[2], 64)
		if f, _ := strconv.ParseFloat(r[3+len(repCols)+2], 64); f < 0.99/w || f > 2.01/w {
			t.Errorf("row %v: %v WRITEs per GET at window %v", r, f, w)
		}
	}
	if st, err := os.Stat(filepath.Join(out, "window.png")); err != nil || st.Size() == 0 {
		t.Fatalf("window.png: %v", err)
	}
}
