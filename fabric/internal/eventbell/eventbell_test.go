package eventbell

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// remoteOf opens a Remote on duplicates of s's shared fds, as a peer
// process would after receiving them.
func remoteOf(t *testing.T, s *Set) *Remote {
	t.Helper()
	var fds []int
	for _, fd := range s.Share() {
		d, err := unix.Dup(fd)
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, d)
	}
	r, err := Open(fds, 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// eventfdCount reads (and resets) bell i's eventfd: how many rings took
// the system call.
func eventfdCount(s *Set, i int) uint64 {
	var b [8]byte
	if n, _ := unix.Read(s.fds[i], b[:]); n != 8 {
		return 0
	}
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16
}

// TestRingAwakeIsMemory: rings to a waiter that is not blocked move the
// counter only; WaitBell and BellRings count them all.
func TestRingAwakeIsMemory(t *testing.T) {
	s, err := New(3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := remoteOf(t, s)
	for range 5 {
		if err := r.Ring(1); err != nil {
			t.Fatal(err)
		}
	}
	s.RingBell(1)
	if n := eventfdCount(s, 1); n != 0 {
		t.Fatalf("%d rings wrote the eventfd of an awake waiter", n)
	}
	if rang, err := s.WaitBell(1, 0); !rang || err != nil {
		t.Fatalf("WaitBell after rings: %v %v", rang, err)
	}
	if got := s.BellRings(1); got != 6 {
		t.Fatalf("BellRings = %d, want 6", got)
	}
	if rang, _ := s.WaitBell(1, 0); rang {
		t.Fatal("WaitBell rang twice for the same rings")
	}
	if rang, _ := s.WaitBell(0, 0); rang {
		t.Fatal("bell 0 rang, only bell 1 was rung")
	}
	r.Ring(7) // out of range: ignored
}

// TestRingersNamed: a ring names its source on its bell, once until taken;
// sources across the bitmap's words all come back; names are reused.
func TestRingersNamed(t *testing.T) {
	s, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := remoteOf(t, s) // source 5
	r.Ring(1)
	r.Ring(1)
	if got := s.TakeRingers(1, nil); len(got) != 1 || got[0] != 5 {
		t.Fatalf("ringers of bell 1: %v, want [5]", got)
	}
	if got := s.TakeRingers(1, nil); len(got) != 0 {
		t.Fatalf("ringers taken twice: %v", got)
	}
	if got := s.TakeRingers(0, nil); len(got) != 0 {
		t.Fatalf("bell 0 names %v, only bell 1 rang", got)
	}
	want := []int{0, 63, 64, 4095, 4096, MaxSources - 1}
	for _, src := range want {
		s.RingFrom(0, src)
	}
	s.RingFrom(0, MaxSources) // past the bitmap: rings unnamed
	s.RingFrom(0, -1)
	if got := s.TakeRingers(0, nil); !slices.Equal(got, want) {
		t.Fatalf("ringers %v, want %v", got, want)
	}
	if rang, _ := s.WaitBell(0, 0); !rang || s.BellRings(0) != uint64(len(want)+2) {
		t.Fatalf("rang %v, %d rings counted, want %d", rang, s.BellRings(0), len(want)+2)
	}
	a, b := s.AllocSource(), s.AllocSource()
	if a != 0 || b != 1 {
		t.Fatalf("sources %d, %d, want 0, 1", a, b)
	}
	s.FreeSource(a)
	if c := s.AllocSource(); c != a {
		t.Fatalf("source %d after freeing %d", c, a)
	}
}

// TestRingWakesBlocked: a ring at any moment around the waiter blocking
// wakes it; none is lost (a lost one would leave WaitBell to its timeout).
func TestRingWakesBlocked(t *testing.T) {
	// A long wait parks in the runtime's poller, but at GOMAXPROCS 1,
	// where it blocks in ppoll (park.go).
	for _, procs := range []int{0, 1} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			if procs > 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			}
			ringWakes(t, 20*time.Second)
		})
	}
}

func ringWakes(t *testing.T, wait time.Duration) {
	s, err := New(1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := remoteOf(t, s)
	for i := range 300 {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n := rand.IntN(4); n > 0 {
				time.Sleep(time.Duration(rand.IntN(50*n)) * time.Microsecond)
			}
			r.Ring(0)
		}()
		start := time.Now()
		rang, err := s.WaitBell(0, wait)
		took := time.Since(start)
		wg.Wait()
		if !rang || err != nil {
			t.Fatalf("round %d: WaitBell = %v, %v after %v: ring lost", i, rang, err, took)
		}
		s.WaitBell(0, 0) // a ring that landed after the wake
	}
	if got := s.BellRings(0); got != 300 {
		t.Fatalf("BellRings = %d, want 300", got)
	}
}

// TestParkedWaitEnds: a parked wait ends at its timeout, and at Close.
func TestParkedWaitEnds(t *testing.T) {
	s, err := New(1)
	if err != nil {
		t.Fatal(err)
	}
	if s.park[0] == nil {
		t.Fatal("bell 0 cannot park: its long waits would hold a P in ppoll")
	}
	start := time.Now()
	if rang, err := s.WaitBell(0, 5*time.Millisecond); rang || err != nil {
		t.Fatalf("WaitBell: %v %v, want a timeout", rang, err)
	}
	if took := time.Since(start); took < 5*time.Millisecond || took > 5*time.Second {
		t.Fatalf("a wait of 5ms took %v", took)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.WaitBell(0, time.Hour)
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	s.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a parked wait outlived Close by 10s")
	}
}

// TestFlagsReadOnlyForPeers: a peer cannot map the flag page writable,
// so it cannot hide a blocked waiter from other ringers.
func TestFlagsReadOnlyForPeers(t *testing.T) {
	s, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ro := s.Share()[1]
	_, err = unix.Mmap(ro, 0, flagBytes(2), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if !errors.Is(err, unix.EACCES) {
		t.Fatalf("writable map of the flag page: %v, want EACCES", err)
	}
}

// TestOpenRejects: Open takes only two sealed pages and then eventfds, and
// closes what it was given when it refuses.
func TestOpenRejects(t *testing.T) {
	s, err := New(1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dup := func(fd int) int {
		d, err := unix.Dup(fd)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	sh := s.Share()
	cases := map[string][]int{
		"no eventfd":       {dup(sh[0]), dup(sh[1])},
		"eventfd as page":  {dup(sh[2]), dup(sh[1]), dup(sh[2])},
		"page as eventfd":  {dup(sh[0]), dup(sh[1]), dup(sh[0])},
		"unsealed counter": {unsealed(t), dup(sh[1]), dup(sh[2])},
		"blocking eventfd": {dup(sh[0]), dup(sh[1]), blockingEventfd(t)},
	}
	for name, fds := range cases {
		if r, err := Open(fds, 5); err == nil {
			r.Close()
			t.Errorf("%s: opened", name)
		}
		for _, fd := range fds {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
				t.Errorf("%s: fd %d left open", name, fd)
			}
		}
	}
}

func blockingEventfd(t *testing.T) int {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

func unsealed(t *testing.T) int {
	fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	unix.Ftruncate(fd, int64(counterBytes(1)))
	return fd
}

// The flag page a peer gets read-only cannot be made writable: not by
// reopening its fd read-write through /proc/self/fd (then mapping it
// writable, writing it, or mapping it read-only and mprotecting it), so
// no peer can hold a blocked partition's flag at 0 and make the others'
// rings skip the eventfd write.
func TestFlagPageNotWritableByPeers(t *testing.T) {
	s, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ro := s.Share()[1]
	rw, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", ro), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Logf("reopen read-write refused: %v", err)
		return
	}
	defer unix.Close(rw)
	size := flagBytes(2)
	if m, err := unix.Mmap(rw, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err == nil {
		unix.Munmap(m)
		t.Fatal("a peer mapped the flag page writable")
	}
	if _, err := unix.Pwrite(rw, []byte{0}, 0); err == nil {
		t.Fatal("a peer wrote the flag page")
	}
	m, err := unix.Mmap(rw, 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	if err := unix.Mprotect(m, unix.PROT_READ|unix.PROT_WRITE); err == nil {
		t.Fatal("a peer made its read-only mapping of the flag page writable")
	}
	// The owner still raises and lowers the flags, and a Remote sees them.
	r := remoteOf(t, s)
	s.pages.flag(1).Store(1)
	if !r.Blocked(1) || m[lineBytes] != 1 {
		t.Fatal("the owner's flag is not seen by peers")
	}
	s.pages.flag(1).Store(0)
}

// WaitBell honours a wait shorter than a millisecond (a partition dozes on
// its bell for tens of microseconds on a crowded host): poll's timeout
// would round it up to a whole one. The quickest of ten waits is judged,
// so a loaded machine does not fail it; and a ring still ends such a wait.
func TestWaitBellShort(t *testing.T) {
	s, err := New(1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	quickest := time.Hour
	for i := 0; i < 10; i++ {
		start := time.Now()
		if rang, err := s.WaitBell(0, 50*time.Microsecond); rang || err != nil {
			t.Fatalf("WaitBell: %v %v, want a timeout", rang, err)
		}
		quickest = min(quickest, time.Since(start))
	}
	if quickest < 50*time.Microsecond || quickest >= 900*time.Microsecond {
		t.Fatalf("quickest of 10 waits of 50µs took %v", quickest)
	}
	r := remoteOf(t, s)
	go func() {
		time.Sleep(time.Millisecond)
		r.Ring(0)
	}()
	if rang, err := s.WaitBell(0, 10*time.Second); !rang || err != nil {
		t.Fatalf("WaitBell with a ring: %v %v", rang, err)
	}
}
