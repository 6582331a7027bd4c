package server_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	"golang.org/x/sys/unix"
)

// shmFlagChild is a shm client that tries to hold every doorbell flag at
// 0 (issue 25, item 4): it reopens its read-only mapping of the flag page
// read-write through /proc/self/map_files and, if that maps, stores 0
// into every flag in a loop. It prints one line saying which, then runs
// until killed.
func shmFlagChild() int {
	addr := strings.Split(os.Getenv(envAttack), ",")[1]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr)
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	defer c.Close()
	flags, err := writableFlags()
	if err != nil {
		fmt.Println("ATTACKING (flag page not writable:", err, ")")
		select {}
	}
	fmt.Println("ATTACKING (flag page mapped writable)")
	for {
		for i := 0; i+4 <= len(flags); i += 64 {
			flags[i], flags[i+1], flags[i+2], flags[i+3] = 0, 0, 0, 0
		}
		time.Sleep(10 * time.Microsecond)
	}
}

// writableFlags maps this process's doorbell flag page read-write.
func writableFlags() ([]byte, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "jakiro-bell-flags") {
			continue
		}
		rng := strings.Fields(line)[0]
		fd, err := unix.Open("/proc/self/map_files/"+rng, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("reopen read-write: %w", err)
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, err
		}
		return unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	}
	return nil, fmt.Errorf("no flag page mapped")
}

// wakeP50 is the median time of one GET after 30 ms of quiet (the
// partition blocked on its doorbell), over n tries.
func wakeP50(t *testing.T, c *client.Client, n int) time.Duration {
	t.Helper()
	ctx := ctxT(t)
	key := []byte("hostile:wake")
	if err := c.Put(ctx, key, []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	var ds []time.Duration
	for range n {
		time.Sleep(30 * time.Millisecond)
		start := time.Now()
		if _, err := c.Get(ctx, key); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// A shm peer that rewrites the doorbell flags it was handed read-only
// changes nothing for the others: their first request after a quiet
// spell is answered within 2x (plus 5 ms for a loaded machine) of a run
// without it (~1 s before the flag page was sealed).
func TestHostileShmFlags(t *testing.T) {
	srv := startJakiro(t, buildJakiro(t), listenFor(t, "shm"))
	c := dialT(t, srv.Addr)
	alone := wakeP50(t, c, 15)
	startAttacker(t, "shmflag", "flags", srv.Addr, 1)
	attacked := wakeP50(t, c, 15)
	t.Logf("wake-up after 30 ms idle, p50: %v alone, %v beside the attacker", alone, attacked)
	if attacked > 2*alone+5*time.Millisecond {
		t.Errorf("wake-up p50 %v beside a peer rewriting the flags, %v without", attacked, alone)
	}
}
