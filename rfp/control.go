package rfp

import (
	"encoding/binary"

	"github.com/jakiro-kv/jakiro/fabric"
)

const controlMagic = 0x4c54434a // "JCTL"

// PutControl encodes the client's control block: the descriptor of its
// local region, where reply-mode responses go. The client WRITEs it into
// the grant's first ControlSize bytes once, right after connecting.
func PutControl(b []byte, local fabric.Desc) int {
	le := binary.LittleEndian
	le.PutUint32(b[0:], controlMagic)
	local.Put(b[4:])
	n := 4 + fabric.DescSize
	le.PutUint32(b[n:], fold(sealSumBytes(b[:n])))
	return n + sumSize
}

func sealSumBytes(b []byte) uint64 { return uint64(sealSum(b, controlMagic, 0)) }

// ParseControl decodes a control block; ok is false while it is absent,
// torn or malformed.
func ParseControl(b []byte) (d fabric.Desc, ok bool) {
	le := binary.LittleEndian
	n := 4 + fabric.DescSize
	if len(b) < n+sumSize || le.Uint32(b) != controlMagic {
		return d, false
	}
	if le.Uint32(b[n:]) != fold(sealSumBytes(b[:n])) {
		return d, false
	}
	d, err := fabric.ParseDesc(b[4:])
	return d, err == nil
}
