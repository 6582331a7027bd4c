package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// With --addr a,b the commands spread keys over both servers, and stats
// prints a section per server; a server that does not answer is named on
// stderr while the others still print.
func TestManyServers(t *testing.T) {
	a, b := startServer(t), startServer(t)
	list := a + "," + b
	const n = 8
	for i := range n {
		if r := jakiro(t, "put", fmt.Sprint("key", i), fmt.Sprint("v", i), "--addr", list); r.code != 0 {
			t.Fatalf("put: %v", r)
		}
	}
	if r := jakiro(t, "get", "key3", "--addr", list); r.code != 0 || r.stdout != "v3\n" {
		t.Fatalf("get: %v", r)
	}
	r := jakiro(t, "stats", "--addr", list)
	if r.code != 0 {
		t.Fatalf("stats: %v", r)
	}
	items := 0
	for _, addr := range []string{a, b} {
		if !strings.Contains(r.stdout, addr+": 2 partitions") {
			t.Errorf("stats lacks a section for %s:\n%s", addr, r.stdout)
		}
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "total" {
			var k int
			fmt.Sscan(f[1], &k)
			items += k
		}
	}
	if items != n {
		t.Errorf("stats: the servers' totals add up to %d items, want %d:\n%s", items, n, r.stdout)
	}

	down := "shm://" + filepath.Join(t.TempDir(), "none.sock")
	r = jakiro(t, "stats", "--addr", a+","+down)
	if r.code == 0 || !strings.Contains(r.stdout, a+": 2 partitions") || !strings.Contains(r.stderr, down) {
		t.Errorf("stats with a server down: want %s's section, an error naming %s and a failing exit: %v", a, down, r)
	}
}
