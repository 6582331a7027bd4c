package shm

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabrictest"
)

// domainMaps is the set of this process's mappings of domain memfds
// (by inode). Earlier tests' dialers may still be unmapping theirs (their
// watcher does it after Close), so checks compare sets: a domain mapped
// since before is new (opened), one gone meanwhile is not.
func domainMaps(t *testing.T) map[string]bool { return memfdMaps(t, "jakiro-shm-domain") }

// memfdMaps is the set of inodes of this process's mappings of memfds
// named name.
func memfdMaps(t *testing.T, name string) map[string]bool {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("cannot read /proc/self/maps: %v", err)
	}
	m := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 5 && strings.Contains(l, "memfd:"+name) {
			m[f[4]] = true
		}
	}
	return m
}

// A listener with Options.Ready keeps that many domains prepared, never
// more, and as many to lend (ready.go); each join takes a fresh one (its own memfd, zeroed, never seen by
// another client, even one that wrote into its grant and vanished); Close
// frees what nobody took.
func TestReadyPool(t *testing.T) {
	const ready, joins = 3, 8
	before := domainMaps(t)
	path := tempSock(t)
	ln, err := fabric.Listen("shm://"+path, fabric.Options{DomainSize: 1 << 20, Ready: ready})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rc := ln.(fabric.ReadyCounter)
	waitReady := func() {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); rc.ReadyStats().Ready < ready; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("pool holds %d domains 5 s after listen, want %d", rc.ReadyStats().Ready, ready)
			}
		}
	}
	waitReady()
	time.Sleep(20 * time.Millisecond) // a refill past the bound would show now
	if st, n := rc.ReadyStats(), opened(before, domainMaps(t)); st.Size != ready || st.Ready != ready || n != 2*ready {
		t.Fatalf("full pool: %+v, %d domains mapped; want %d ready and %d mapped (as many to lend)", st, n, ready, 2*ready)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seen := map[uint64]bool{}
	for i := range joins {
		p, err := fabrictest.Connect(ctx, ln, fabric.Options{DomainSize: 1 << 20}, 4096, 64<<10, nil)
		if err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
		ino := domainInode(t, p.A)
		if seen[ino] {
			t.Errorf("join %d got a domain an earlier client had", i)
		}
		seen[ino] = true
		if !bytes.Equal(p.AReg.Bytes(), make([]byte, 64<<10)) {
			t.Errorf("join %d: its grant is not zeroed", i)
		}
		// Write the whole grant, then vanish.
		copy(p.DReg.Bytes(), bytes.Repeat([]byte{0xa5}, 4096))
		for off := 0; off < 64<<10; off += 4096 {
			if err := fabric.Write(p.D, p.DReg, 0, p.ToA, uint64(off), 4096); err != nil {
				t.Fatalf("join %d: WRITE: %v", i, err)
			}
		}
		p.D.Close()
		p.A.Close()
		if st := rc.ReadyStats(); st.Ready > ready {
			t.Fatalf("pool holds %d domains, over its bound %d", st.Ready, ready)
		}
	}
	st := rc.ReadyStats()
	if st.Taken+st.Missed != joins || st.Taken == 0 {
		t.Errorf("after %d joins: %+v", joins, st)
	}
	waitReady()
	ln.Close()
	// A dialer's Close leaves its munmaps to its watcher, at once.
	for deadline := time.Now().Add(5 * time.Second); opened(before, domainMaps(t)) != 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
	}
	if n := opened(before, domainMaps(t)); n != 0 {
		t.Errorf("%d domains still mapped after the listener closed", n)
	}
}

// A DomainSize no domain can have fails a pooled listener at once.
func TestReadyPoolBadSize(t *testing.T) {
	if ln, err := fabric.Listen("shm://"+tempSock(t), fabric.Options{DomainSize: maxDomainSize + 1, Ready: 2}); err == nil {
		ln.Close()
		t.Fatal("a listener with an impossible DomainSize and a pool started")
	}
}
