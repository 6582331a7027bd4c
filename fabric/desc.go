package fabric

import (
	"encoding/binary"
	"fmt"
)

// DescSize is the encoded size of a Desc.
const DescSize = 20

// Desc is the remote descriptor of a registered region: what a peer needs
// to address it with one-sided operations. Addr is provider-defined (an
// offset within the connection's domain for shm and tcp, a virtual address
// for verbs); Key is the region's remote key.
type Desc struct {
	Addr uint64
	Len  uint64
	Key  uint32
}

// Put encodes d into b[:DescSize] (little endian).
func (d Desc) Put(b []byte) {
	_ = b[DescSize-1]
	binary.LittleEndian.PutUint64(b[0:], d.Addr)
	binary.LittleEndian.PutUint64(b[8:], d.Len)
	binary.LittleEndian.PutUint32(b[16:], d.Key)
}

// ParseDesc decodes a Desc written by Put.
func ParseDesc(b []byte) (Desc, error) {
	if len(b) < DescSize {
		return Desc{}, fmt.Errorf("fabric: descriptor needs %d bytes, have %d", DescSize, len(b))
	}
	return Desc{
		Addr: binary.LittleEndian.Uint64(b[0:]),
		Len:  binary.LittleEndian.Uint64(b[8:]),
		Key:  binary.LittleEndian.Uint32(b[16:]),
	}, nil
}

// Sub returns the descriptor of bytes [off, off+n) of d. It does not check
// bounds: the target does, when an operation uses the descriptor.
func (d Desc) Sub(off, n uint64) Desc {
	return Desc{Addr: d.Addr + off, Len: n, Key: d.Key}
}

func (d Desc) String() string {
	return fmt.Sprintf("{addr=%#x len=%d key=%#x}", d.Addr, d.Len, d.Key)
}
