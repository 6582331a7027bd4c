package main

import (
	"errors"
	"io"
	"testing"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/internal/stressval"
)

// TestStressWorkerVerdicts: what a stress reader counts for each outcome.
func TestStressWorkerVerdicts(t *testing.T) {
	w := newStressWorker(1, "t", 2, 2, stressSizes(100), 30, 4, io.Discard)
	val := func(k int, writer uint32, version uint64) []byte {
		return stressval.Append(nil, w.keys[k], writer, version, 40)
	}
	w.putDone(0, 5, nil)
	w.getDone(0, val(0, 1, 3), nil) // own older version after own PUT of 5
	if w.n.Stale != 1 {
		t.Fatalf("own version going back: stale %d", w.n.Stale)
	}
	w.getDone(0, val(0, 2, 7), nil)
	w.getDone(0, val(0, 2, 7), nil) // same version again is fine
	w.getDone(1, val(1, 2, 1), nil) // another key has its own history
	if w.n.Stale != 1 {
		t.Fatalf("fresh values counted stale: %d", w.n.Stale)
	}
	w.getDone(0, val(0, 2, 6), nil)
	if w.n.Stale != 2 {
		t.Fatalf("other writer going back: stale %d", w.n.Stale)
	}
	w.getDone(0, val(1, 2, 9), nil) // key 1's value under key 0
	w.getDone(0, val(0, 3, 9), nil) // no writer 3 in this run
	w.getDone(0, []byte("garbage, not a value"), nil)
	if w.n.Invalid != 3 {
		t.Fatalf("invalid %d, want 3", w.n.Invalid)
	}
	w.getDone(0, nil, client.ErrNotFound)
	w.getDone(0, nil, errors.New("connection failed"))
	w.putDone(1, 8, client.ErrNoMemory)
	if w.n.Errors != 2 || w.n.Ops != 12 || w.n.Gets != 10 || w.n.Puts != 2 || w.n.Hits != 8 {
		t.Fatalf("counts %+v", w.n)
	}
}

func TestStressSizes(t *testing.T) {
	got := stressSizes(64 << 10)
	want := map[int]bool{1: true, 32: true, 40: true, 41: true, 64: true, 256: true, 1024: true, 64<<10 - 1: true, 64 << 10: true}
	for i, n := range got {
		delete(want, n)
		if i > 0 && n <= got[i-1] || n > 64<<10 {
			t.Fatalf("sizes not increasing within the max: %v", got)
		}
	}
	if len(want) > 0 {
		t.Fatalf("sizes %v lack %v", got, want)
	}
	if s := stressSizes(30); s[len(s)-1] != 30 {
		t.Fatalf("small max value: %v", s)
	}
}
