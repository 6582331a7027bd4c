//go:build rdma

package verbs

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"log"
	"sync"
	"syscall"
	"unsafe"

	"github.com/jakiro-kv/jakiro/fabric"
)

const hugePage = 2 << 20

var hugeFallback sync.Once

// region is a registered mmap area; regs[index] of its conn.
type region struct {
	mem  []byte
	mr   *C.struct_ibv_mr
	base uint64
	lkey uint32
	live bool
	huge bool
	fr   *fabric.Region
}

// mapMem maps size zeroed bytes off the Go heap: huge pages when size is a
// multiple of 2 MiB and the kernel has some free, else 4 KiB pages.
func mapMem(size int) (mem []byte, huge bool, err error) {
	const prot = syscall.PROT_READ | syscall.PROT_WRITE
	const flags = syscall.MAP_PRIVATE | syscall.MAP_ANONYMOUS
	if size%hugePage == 0 {
		mem, err := syscall.Mmap(-1, 0, size, prot, flags|syscall.MAP_HUGETLB)
		if err == nil {
			return mem, true, nil
		}
		hugeFallback.Do(func() {
			log.Printf("verbs: no huge pages for a %d-byte region (%v); using 4 KiB pages", size, err)
		})
	}
	mem, err = syscall.Mmap(-1, 0, size, prot, flags)
	return mem, false, err
}

// Alloc maps and registers a region in the connection's protection domain.
func (c *conn) Alloc(size int) (*fabric.Region, error) {
	if size <= 0 {
		return nil, fmt.Errorf("verbs: region size %d", size)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fabric.ErrClosed
	}
	if c.domainUsed+int64(size) > c.opts.DomainSize {
		return nil, fabric.ErrNoMemory
	}
	mem, huge, err := mapMem(size)
	if err != nil {
		return nil, fmt.Errorf("%w: mmap %d bytes: %v", fabric.ErrNoMemory, size, err)
	}
	const access = C.IBV_ACCESS_LOCAL_WRITE | C.IBV_ACCESS_REMOTE_WRITE | C.IBV_ACCESS_REMOTE_READ
	mr, err := C.ibv_reg_mr(c.pd, unsafe.Pointer(&mem[0]), C.size_t(size), access)
	if mr == nil {
		syscall.Munmap(mem)
		return nil, fmt.Errorf("%w: ibv_reg_mr %d bytes: %v (locked-memory limit? ulimit -l)", fabric.ErrNoMemory, size, err)
	}
	r := &region{mem: mem, mr: mr, base: uint64(uintptr(unsafe.Pointer(&mem[0]))), lkey: uint32(mr.lkey), live: true, huge: huge}
	idx := len(c.regs)
	c.regs = append(c.regs, r)
	c.domainUsed += int64(size)
	desc := fabric.Desc{Addr: r.base, Len: uint64(size), Key: uint32(mr.rkey)}
	r.fr = fabric.NewRegion(mem, desc, uint64(c.tag)<<32|uint64(idx), func() error { return c.free(r) })
	return r.fr, nil
}

// free deregisters and unmaps r (Region.Close, or the conn's Close).
func (c *conn) free(r *region) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !r.live {
		return nil
	}
	r.live = false
	c.domainUsed -= int64(len(r.mem))
	var err error
	if rc := C.ibv_dereg_mr(r.mr); rc != 0 {
		err = errnoErr("ibv_dereg_mr", rc)
	}
	if e := syscall.Munmap(r.mem); e != nil && err == nil {
		err = e
	}
	return err
}
