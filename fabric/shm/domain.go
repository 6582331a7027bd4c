package shm

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/jakiro-kv/jakiro/fabric"
)

// A domain is the memfd one side of one connection grants its peer: the
// table page(s) followed by the region area.
type domain struct {
	id   uint64 // process-unique; in the upper half of region handles
	fd   int    // the memfd until the peer has it (handOff), then -1
	ino  uint64 // the memfd's inode, to find its mappings
	mem  []byte // whole mapping: table + region area
	size int64  // region area bytes (Options.DomainSize)

	mu     sync.Mutex
	closed bool
	free   []extent // sorted by off, coalesced
	// keys is the private copy of the table's keys by slot, used for local
	// checks at Post: the shared table is writable by the peer.
	keys [tableSlots]atomic.Uint32
	hint int // next slot to try
}

type extent struct{ off, len uint64 }

var domainIDs atomic.Uint64

const pageSize = 4096

// maxDomainSize bounds Options.DomainSize (and a peer's memfd) so offsets
// never overflow int on 64-bit hosts and mappings stay sane.
const maxDomainSize = 1 << 44

// pageRound rounds n up to whole pages, as newDomain rounds DomainSize.
func pageRound(n int64) int64 { return (n + pageSize - 1) &^ (pageSize - 1) }

// newDomain creates, sizes, seals and maps a memfd of size region bytes.
func newDomain(size int64) (*domain, error) {
	if size <= 0 || size > maxDomainSize {
		return nil, fmt.Errorf("shm: domain size %d out of range (1..%d)", size, int64(maxDomainSize))
	}
	size = pageRound(size)
	fd, err := unix.MemfdCreate("jakiro-shm-domain", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("shm: memfd_create: %w", err)
	}
	total := tableSize + size
	if err := unix.Ftruncate(fd, total); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: ftruncate memfd: %w", err)
	}
	// Sealed before anything else, so the peer can rely on the size and
	// no seal can ever be added to forbid our writes.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, requiredSeals); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: seal memfd: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, int(total), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: mmap domain: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Munmap(mem)
		unix.Close(fd)
		return nil, fmt.Errorf("shm: fstat memfd: %w", err)
	}
	writeHeader(mem)
	return domainOf(mem, fd, st.Ino), nil
}

// domainOf is the domain mapped at mem (table, then region area), its
// memfd fd (-1: handed off) of inode ino, with nothing allocated yet.
func domainOf(mem []byte, fd int, ino uint64) *domain {
	size := int64(len(mem)) - tableSize
	return &domain{
		id:   domainIDs.Add(1),
		fd:   fd,
		ino:  ino,
		mem:  mem,
		size: size,
		free: []extent{{off: tableSize, len: uint64(size)}},
		hint: 1,
	}
}

// adoptDomain makes a dialer's domain of the memfd its listener made for
// it (fabric.Options.BorrowDomain): checked as a peer's domain is
// (sealed, within MaxDialerDomain, a valid table header), mapped whole,
// and the fd closed. The listener keeps its own mapping of it, as it
// would of a domain the dialer made: it can reach nothing it could not
// reach then.
func adoptDomain(fd int) (*domain, error) {
	mem, ino, err := mapDomainFD(fd, MaxDialerDomain, MaxDialerDomain)
	if err != nil {
		return nil, err
	}
	if len(mem) < tableSize+pageSize {
		unix.Munmap(mem)
		return nil, fmt.Errorf("%w: lent domain of %d bytes has no room for a region", errProtocol, len(mem))
	}
	return domainOf(mem, -1, ino), nil
}

// requiredSeals make a memfd safe to map from an untrusted owner: it can
// neither shrink (SIGBUS for us) nor grow, nor gain new seals.
const requiredSeals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

// alloc registers a zeroed region of n bytes.
func (d *domain) alloc(n int) (*fabric.Region, error) {
	if n <= 0 {
		return nil, fmt.Errorf("shm: region size %d must be positive", n)
	}
	need := (uint64(n) + pageSize - 1) &^ (pageSize - 1)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fabric.ErrClosed
	}
	slot := d.freeSlot()
	if slot == 0 {
		return nil, fmt.Errorf("%w: %d regions per connection", fabric.ErrNoMemory, tableSlots-1)
	}
	i := -1
	for j, e := range d.free {
		if e.len >= need {
			i = j
			break
		}
	}
	if i < 0 {
		return nil, fmt.Errorf("%w: no %d free bytes in a %d-byte domain", fabric.ErrNoMemory, need, d.size)
	}
	off := d.free[i].off
	if d.free[i].len == need {
		d.free = append(d.free[:i], d.free[i+1:]...)
	} else {
		d.free[i].off += need
		d.free[i].len -= need
	}
	key := rand.Uint32()<<slotBits | uint32(slot)
	publish(d.mem, slot, key, off, uint64(n))
	d.keys[slot].Store(key)
	mem := d.mem[off : off+uint64(n) : off+uint64(n)]
	desc := fabric.Desc{Addr: off, Len: uint64(n), Key: key}
	return fabric.NewRegion(mem, desc, d.id<<32|uint64(slot), func() error {
		return d.release(slot, key, extent{off, need})
	}), nil
}

// freeSlot returns an unused table slot, or 0. d.mu held.
func (d *domain) freeSlot() int {
	for k := 0; k < tableSlots-1; k++ {
		s := d.hint
		d.hint++
		if d.hint == tableSlots {
			d.hint = 1
		}
		if d.keys[s].Load() == 0 {
			return s
		}
	}
	return 0
}

// release deregisters a region and returns its pages to the kernel, so a
// later region there starts zeroed.
func (d *domain) release(slot int, key uint32, e extent) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.keys[slot].Load() != key {
		return nil // the whole domain is gone already
	}
	unpublish(d.mem, slot)
	d.keys[slot].Store(0)
	// Punch a hole through the mapping (the memfd itself may be closed).
	if err := unix.Madvise(d.mem[e.off:e.off+e.len], unix.MADV_REMOVE); err != nil {
		clear(d.mem[e.off : e.off+e.len])
	}
	// Insert sorted, coalescing with neighbours.
	i := 0
	for i < len(d.free) && d.free[i].off < e.off {
		i++
	}
	d.free = append(d.free, extent{})
	copy(d.free[i+1:], d.free[i:])
	d.free[i] = e
	if i+1 < len(d.free) && d.free[i].off+d.free[i].len == d.free[i+1].off {
		d.free[i].len += d.free[i+1].len
		d.free = append(d.free[:i+1], d.free[i+2:]...)
	}
	if i > 0 && d.free[i-1].off+d.free[i-1].len == d.free[i].off {
		d.free[i-1].len += d.free[i].len
		d.free = append(d.free[:i], d.free[i+1:]...)
	}
	return nil
}

// owns reports whether r is a live region of this domain.
func (d *domain) owns(r *fabric.Region) bool {
	h := r.Handle()
	slot := h & (tableSlots - 1)
	return h>>32 == d.id && h&0xffffffff < tableSlots && slot != 0 &&
		d.keys[slot].Load() == r.Desc().Key
}

// close unmaps the domain and closes its memfd. Regions die with it.
func (d *domain) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	for i := range d.keys {
		if d.keys[i].Load() != 0 { // a Store is an XCHG: 1023 of them cost µs
			d.keys[i].Store(0)
		}
	}
	err := unix.Munmap(d.mem)
	d.mem = nil
	if d.fd >= 0 {
		if cerr := unix.Close(d.fd); err == nil {
			err = cerr
		}
		d.fd = -1
	}
	return err
}

// handOff closes the memfd once the peer holds it: the mapping keeps the
// file alive, and a connection then costs one descriptor (its socket),
// not two — 10,000 clients fit the usual 20,000-file limit.
func (d *domain) handOff() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
}
