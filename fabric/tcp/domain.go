package tcp

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"

	"github.com/jakiro-kv/jakiro/fabric"
	"golang.org/x/sys/unix"
)

// domain is one connection's protection domain: the regions its peer may
// reach, by key.
type domain struct {
	limit int64

	mu     sync.Mutex
	live   int64     // bytes of open regions, against limit
	next   uint64    // next virtual base address
	all    []*region // every region still mapped, for closeAll
	closed bool

	// keys is copy-on-write so that the NIC and Post look regions up
	// without locks or allocation.
	keys atomic.Pointer[map[uint32]*region]
}

// region is the provider side of a fabric.Region.
type region struct {
	d    *domain
	pub  *fabric.Region
	mmap []byte // the whole mapping, for Munmap
	mem  []byte // mmap[:size]
	base uint64 // Desc.Addr
	size uint64
	key  uint32

	// state counts the NIC and in-flight ops using mem, plus closingBit
	// once the region is closed: the last user out unmaps.
	state     atomic.Int64
	unmapOnce sync.Once
}

const closingBit = 1 << 62

var pageSize = uint64(os.Getpagesize())

func newDomain(limit int64) *domain {
	d := &domain{limit: limit, next: pageSize}
	m := map[uint32]*region{}
	d.keys.Store(&m)
	return d
}

func (d *domain) alloc(size int) (*fabric.Region, error) {
	if size <= 0 {
		return nil, fmt.Errorf("fabric/tcp: region size %d", size)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fabric.ErrClosed
	}
	if int64(size) > d.limit-d.live {
		return nil, fmt.Errorf("%w: %d bytes requested, %d of %d in use", fabric.ErrNoMemory, size, d.live, d.limit)
	}
	mapped := (uint64(size) + pageSize - 1) &^ (pageSize - 1)
	mm, err := unix.Mmap(-1, 0, int(mapped), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("%w: mmap %d bytes: %v", fabric.ErrNoMemory, mapped, err)
	}
	old := *d.keys.Load()
	key := rand.Uint32()
	for key == 0 || old[key] != nil {
		key = rand.Uint32()
	}
	r := &region{d: d, mmap: mm, mem: mm[:size:size], base: d.next, size: uint64(size), key: key}
	// A guard page between regions so that Addr of one region's end is
	// never another's start.
	d.next += mapped + pageSize
	r.pub = fabric.NewRegion(r.mem, fabric.Desc{Addr: r.base, Len: r.size, Key: key}, uint64(key), r.close)
	m := make(map[uint32]*region, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[key] = r
	d.keys.Store(&m)
	d.live += int64(size)
	d.all = append(d.all, r)
	return r.pub, nil
}

// lookup finds the region a peer names by key; nil if unknown.
func (d *domain) lookup(key uint32) *region {
	return (*d.keys.Load())[key]
}

// local finds the provider region behind a fabric.Region of this domain.
func (d *domain) local(pub *fabric.Region) *region {
	if pub == nil {
		return nil
	}
	r := (*d.keys.Load())[pub.Desc().Key]
	if r == nil || r.pub != pub {
		return nil
	}
	return r
}

// access resolves [addr, addr+n) for the peer and takes a reference on the
// region; nil if the key is unknown or the range leaves the region.
func (d *domain) access(key uint32, addr uint64, n uint64) (*region, uint64) {
	r := d.lookup(key)
	if r == nil || addr < r.base || n > r.size || addr-r.base > r.size-n || !r.acquire() {
		return nil, 0
	}
	return r, addr - r.base
}

func (r *region) acquire() bool {
	for {
		s := r.state.Load()
		if s&closingBit != 0 {
			return false
		}
		if r.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

func (r *region) release() {
	if r.state.Add(-1) == closingBit {
		r.unmap()
	}
}

// close is the fabric.Region's free: the peer loses access now, the memory
// goes when the last in-flight user releases it.
func (r *region) close() error {
	d := r.d
	d.mu.Lock()
	old := *d.keys.Load()
	if old[r.key] == r {
		m := make(map[uint32]*region, len(old))
		for k, v := range old {
			if k != r.key {
				m[k] = v
			}
		}
		d.keys.Store(&m)
		d.live -= int64(r.size)
	}
	d.mu.Unlock()
	if r.state.Or(closingBit) == 0 {
		r.unmap()
	}
	return nil
}

func (r *region) unmap() {
	r.unmapOnce.Do(func() {
		_ = unix.Munmap(r.mmap)
		d := r.d
		d.mu.Lock()
		for i, x := range d.all {
			if x == r {
				d.all[i] = d.all[len(d.all)-1]
				d.all = d.all[:len(d.all)-1]
				break
			}
		}
		d.mu.Unlock()
	})
}

// closeAll closes every region and unmaps them all, references or not.
// The caller guarantees nothing touches region memory any more (the NIC
// goroutines have exited and Post is excluded).
func (d *domain) closeAll() {
	d.mu.Lock()
	d.closed = true
	all := d.all
	d.all = nil
	d.mu.Unlock()
	for _, r := range all {
		_ = r.pub.Close()
		r.unmap()
	}
}
