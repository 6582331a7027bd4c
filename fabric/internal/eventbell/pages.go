package eventbell

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// lineBytes keeps each bell's counter (and flag) on its own cache line:
// clients of different partitions ring without sharing a line.
const lineBytes = 64

// pageSeals keep a shared page from shrinking under a process that maps
// it (a shrunk mapping faults on access).
const pageSeals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

// pages are a Set's counters and flags, mapped from two memfds.
type pages struct {
	counters, flags []byte
	counterFD       int // -1 once closed or when not kept
	flagFD          int
}

func pagesBytes(n int) int {
	ps := unix.Getpagesize()
	return (n*lineBytes + ps - 1) / ps * ps
}

func (p *pages) counter(i int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&p.counters[i*lineBytes]))
}

func (p *pages) flag(i int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&p.flags[i*lineBytes]))
}

func (p *pages) closeFDs() {
	for _, fd := range []*int{&p.counterFD, &p.flagFD} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// newPages makes the pages of n bells, mapped read-write here, and a
// read-only fd of the flag page for peers.
func newPages(n int) (pages, int, error) {
	p := pages{counterFD: -1, flagFD: -1}
	size := pagesBytes(max(n, 1))
	var err error
	if p.counterFD, p.counters, err = sharedPage("jakiro-bell-counters", size); err == nil {
		p.flagFD, p.flags, err = sharedPage("jakiro-bell-flags", size)
	}
	if err != nil {
		p.closeFDs()
		return pages{}, -1, err
	}
	// A peer given this fd can map the flags only for reading.
	ro, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", p.flagFD), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		p.closeFDs()
		return pages{}, -1, fmt.Errorf("fabric: reopen bell flags read-only: %w", err)
	}
	return p, ro, nil
}

func sharedPage(name string, size int) (int, []byte, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, nil, fmt.Errorf("fabric: memfd for doorbells: %w", err)
	}
	if err = unix.Ftruncate(fd, int64(size)); err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, pageSeals)
	}
	var mem []byte
	if err == nil {
		mem, err = unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	}
	if err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("fabric: doorbell page: %w", err)
	}
	return fd, mem, nil
}

// Remote rings the bells of a Set in another process, from the fds its
// Share gave.
type Remote struct {
	pages pages
	fds   []int
}

// Open takes over shared (as Share orders them: counter page, flag page,
// eventfds), checks each is what it must be, and maps the pages. It
// closes every fd it does not keep, also on error. Empty shared: no bells.
func Open(shared []int) (*Remote, error) {
	if len(shared) == 0 {
		return &Remote{pages: pages{counterFD: -1, flagFD: -1}}, nil
	}
	fail := func(format string, a ...any) (*Remote, error) {
		for _, fd := range shared {
			unix.Close(fd)
		}
		return nil, fmt.Errorf(format, a...)
	}
	if len(shared) < 3 {
		return fail("doorbells: %d fds, want 2 pages and at least one eventfd", len(shared))
	}
	bells := shared[2:]
	for _, fd := range bells {
		// We will write to these: they must be eventfds, nothing else.
		if !IsFD(fd) {
			return fail("doorbell fd is not an eventfd")
		}
	}
	size := pagesBytes(len(bells))
	counters, err := mapPage(shared[0], size, unix.PROT_READ|unix.PROT_WRITE)
	if err != nil {
		return fail("doorbell counters: %v", err)
	}
	flags, err := mapPage(shared[1], size, unix.PROT_READ)
	if err != nil {
		unix.Munmap(counters)
		return fail("doorbell flags: %v", err)
	}
	unix.Close(shared[0])
	unix.Close(shared[1])
	return &Remote{pages: pages{counters: counters, flags: flags, counterFD: -1, flagFD: -1}, fds: bells}, nil
}

// mapPage maps a sealed memfd of at least size bytes.
func mapPage(fd, size int, prot int) ([]byte, error) {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil || seals&pageSeals != pageSeals {
		return nil, fmt.Errorf("not a sealed memfd (seals %#x, %v)", seals, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Size < int64(size) {
		return nil, fmt.Errorf("%d bytes, want %d", st.Size, size)
	}
	return unix.Mmap(fd, 0, size, prot, unix.MAP_SHARED)
}

// Bells is how many bells r rings.
func (r *Remote) Bells() int { return len(r.fds) }

// Ring rings bell i; out-of-range bells are ignored. Not concurrent with
// Close.
func (r *Remote) Ring(i int) error {
	if r == nil || i < 0 || i >= len(r.fds) {
		return nil
	}
	return ring(&r.pages, r.fds, i)
}

// Blocked reports whether bell i's waiter is blocked on it.
func (r *Remote) Blocked(i int) bool {
	if r == nil || i < 0 || i >= len(r.fds) {
		return false
	}
	return r.pages.flag(i).Load() != 0
}

// Close unmaps the pages and closes the eventfds.
func (r *Remote) Close() {
	if r == nil {
		return
	}
	if r.pages.counters != nil {
		unix.Munmap(r.pages.counters)
		unix.Munmap(r.pages.flags)
	}
	for _, fd := range r.fds {
		unix.Close(fd)
	}
	r.pages, r.fds = pages{counterFD: -1, flagFD: -1}, nil
}
