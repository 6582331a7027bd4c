package main

import (
	"testing"
	"time"
)

// A hog spins: it takes CPU time while it runs, and stop ends it.
func TestHogsSpin(t *testing.T) {
	h, err := startHogs(1)
	if err != nil {
		t.Fatal(err)
	}
	pid := h[0].Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for procCPU(pid) < 50*time.Millisecond {
		if time.Now().After(deadline) {
			h.stop()
			t.Fatalf("hog used %v of CPU in 10 s", procCPU(pid))
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.stop()
	if h[0].ProcessState == nil || h[0].ProcessState.Success() {
		t.Fatalf("hog not killed: %v", h[0].ProcessState)
	}
}
