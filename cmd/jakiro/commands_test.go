package main

import (
	"strings"
	"testing"
	"time"
)

// TestCommandEdgeCases: the memcached commands' failures exit with their
// own status, and gets prints what cas takes.
func TestCommandEdgeCases(t *testing.T) {
	addr := startServer(t)
	run := func(want int, args ...string) result {
		t.Helper()
		r := jakiro(t, append(args, "--addr", addr)...)
		if r.code != want {
			t.Fatalf("jakiro %s: %v, want exit %d", strings.Join(args, " "), r, want)
		}
		return r
	}
	run(exitNotStored, "append", "missing", "x")
	run(exitNotStored, "prepend", "missing", "x")
	run(0, "put", "k", "v", "--flags", "9")
	r := run(0, "gets", "k")
	lines := strings.SplitN(r.stdout, "\n", 2)
	if f := strings.Fields(lines[0]); len(f) != 2 || f[1] != "9" || lines[1] != "v\n" {
		t.Fatalf("gets: %q, want VERSION 9 then v", r.stdout)
	}
	ver := strings.Fields(lines[0])[0]
	run(0, "cas", "k", ver, "w")
	run(exitExists, "cas", "k", ver, "again")
	run(exitNotFound, "cas", "missing", ver, "x")
	run(exitError, "cas", "k", "notanumber", "x")
	run(exitNotNumeric, "incr", "k")
	run(0, "put", "n", "3")
	if r := run(0, "decr", "n", "5"); r.stdout != "0\n" {
		t.Fatalf("decr 3-5: %q, want 0", r.stdout)
	}
	run(0, "put", "e", "v", "--ttl", "1")
	time.Sleep(2100 * time.Millisecond)
	run(exitNotFound, "touch", "e", "10")
	run(exitNotFound, "gat", "e", "10")
	// The delay counts on a clock of whole seconds (memcached's too): the
	// flush comes 2 to 3 s after the command, so the get right after it
	// (a new process) has 2 s, however late in its second the flush came.
	run(0, "flush", "--delay", "3")
	run(0, "get", "k")
	time.Sleep(3100 * time.Millisecond)
	run(exitNotFound, "get", "k")
}
