package eventbell

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// lineBytes keeps each bell's counter (and flag) on its own cache line:
// clients of different partitions ring without sharing a line.
const lineBytes = 64

// MaxSources is how many ringers a bell can name (Set.AllocSource): each
// bell has a bitmap of them, with a summary bit per bitmap word, so the
// waiter finds who rang in a few loads whatever the number of peers.
// Ringers past it ring unnamed.
const MaxSources = 16384

const (
	sourceWords  = MaxSources / 64
	summaryWords = sourceWords / 64
	// A bell's share of the counter page: its counter line, a line for
	// the summary, then the bitmap.
	bellStride = lineBytes + lineBytes + sourceWords*8
)

// pageSeals keep a shared page from shrinking under a process that maps
// it (a shrunk mapping faults on access).
const pageSeals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

// flagSeals: the flag page is also sealed against every write but
// through the owner's mapping, made before. A read-only fd alone is not
// enough: a peer can reopen it read-write through /proc/self/fd, and one
// that held the flags at 0 would make every client skip the eventfd
// write that wakes a blocked partition.
const flagSeals = pageSeals | unix.F_SEAL_FUTURE_WRITE

// pages are a Set's counters and flags, mapped from two memfds.
type pages struct {
	counters, flags []byte
	counterFD       int // -1 once closed or when not kept
	flagFD          int
}

func roundPage(n int) int {
	ps := unix.Getpagesize()
	return (n + ps - 1) / ps * ps
}

func counterBytes(n int) int { return roundPage(n * bellStride) }
func flagBytes(n int) int    { return roundPage(n * lineBytes) }

func (p *pages) word(off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&p.counters[off]))
}

func (p *pages) counter(i int) *atomic.Uint64 { return p.word(i * bellStride) }

func (p *pages) summary(i, w int) *atomic.Uint64 { return p.word(i*bellStride + lineBytes + w*8) }

func (p *pages) sources(i, w int) *atomic.Uint64 {
	return p.word(i*bellStride + 2*lineBytes + w*8)
}

// name marks source src as a ringer of bell i: its bitmap bit, then the
// summary bit, both before the ring is counted, so a waiter that sees the
// count sees the names.
func (p *pages) name(i, src int) {
	if src < 0 || src >= MaxSources {
		return
	}
	w := src / 64
	p.sources(i, w).Or(1 << (src % 64))
	p.summary(i, w/64).Or(1 << (w % 64))
}

// take appends to dst the sources named on bell i since the last take
// and clears them.
func (p *pages) take(i int, dst []int) []int {
	for sw := range summaryWords {
		sum := p.summary(i, sw).Swap(0)
		for sum != 0 {
			b := bits.TrailingZeros64(sum)
			sum &^= 1 << b
			w := sw*64 + b
			set := p.sources(i, w).Swap(0)
			for set != 0 {
				s := bits.TrailingZeros64(set)
				set &^= 1 << s
				dst = append(dst, w*64+s)
			}
		}
	}
	return dst
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
	n = max(n, 1)
	var err error
	if p.counterFD, p.counters, err = sharedPage("jakiro-bell-counters", counterBytes(n), pageSeals); err == nil {
		p.flagFD, p.flags, err = sharedPage("jakiro-bell-flags", flagBytes(n), flagSeals)
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

// sharedPage makes a memfd of size bytes, maps it read-write, then seals
// it (after the mapping: F_SEAL_FUTURE_WRITE forbids later writable ones).
func sharedPage(name string, size int, seals int) (int, []byte, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, nil, fmt.Errorf("fabric: memfd for doorbells: %w", err)
	}
	var mem []byte
	if err = unix.Ftruncate(fd, int64(size)); err == nil {
		mem, err = unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	}
	if err == nil {
		if _, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
			unix.Munmap(mem)
			err = fmt.Errorf("seals %#x (F_SEAL_FUTURE_WRITE needs Linux 5.1): %w", seals, err)
		}
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
	pages  pages
	fds    []int
	source int // the name it rings under (Set.AllocSource), -1: none
}

// Open takes over shared (as Share orders them: counter page, flag page,
// eventfds), checks each is what it must be, and maps the pages; its
// rings name source (-1: none). It closes every fd it does not keep, also
// on error. Empty shared: no bells.
func Open(shared []int, source int) (*Remote, error) {
	if len(shared) == 0 {
		return &Remote{pages: pages{counterFD: -1, flagFD: -1}, source: -1}, nil
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
		// We will write to these: they must be eventfds, nothing else,
		// and non-blocking: a ring into a blocking eventfd at its
		// maximum count would never return. (The sender shares the open
		// file and could clear the flag later; this catches the rest.)
		if !IsFD(fd) {
			return fail("doorbell fd is not an eventfd")
		}
		if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK == 0 {
			return fail("doorbell eventfd is blocking")
		}
	}
	counters, err := mapPage(shared[0], counterBytes(len(bells)), unix.PROT_READ|unix.PROT_WRITE)
	if err != nil {
		return fail("doorbell counters: %v", err)
	}
	flags, err := mapPage(shared[1], flagBytes(len(bells)), unix.PROT_READ)
	if err != nil {
		unix.Munmap(counters)
		return fail("doorbell flags: %v", err)
	}
	unix.Close(shared[0])
	unix.Close(shared[1])
	return &Remote{pages: pages{counters: counters, flags: flags, counterFD: -1, flagFD: -1}, fds: bells, source: source}, nil
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
	return ring(&r.pages, r.fds, i, r.source)
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
