package rfp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jakiro-kv/jakiro/fabric"
)

const (
	helloMagic   = 0x4f524b4a // "JKRO"
	welcomeMagic = 0x574b524a // "JRKW"
	// Version is the protocol version both sides must speak: 3 has rings
	// of variable-length records on cache lines (2 had them 8-byte
	// aligned, 1 had rings of fixed slots).
	Version = 3
)

// Hello is the client's handshake private data.
type Hello struct {
	Version uint8
	Slots   uint16 // requested slots per ring; 0 = server default
	// Proof is AuthProof of the client's token, if HasProof.
	Proof    [AuthProofSize]byte
	HasProof bool
}

// A hello is magic:u32 version:u8 flags:u8 slots:u16, then the token
// proof when flags has helloAuth: 40 bytes, within fabric.MaxDialData.
const (
	helloSize     = 8
	helloAuthSize = helloSize + AuthProofSize
	helloAuth     = 1 // flags: a token proof follows
)

// Put encodes h.
func (h Hello) Put() []byte {
	n := helloSize
	if h.HasProof {
		n = helloAuthSize
	}
	b := make([]byte, n)
	binary.LittleEndian.PutUint32(b, helloMagic)
	b[4] = h.Version
	binary.LittleEndian.PutUint16(b[6:], h.Slots)
	if h.HasProof {
		b[5] |= helloAuth
		copy(b[helloSize:], h.Proof[:])
	}
	return b
}

// ErrVersion says the two sides speak different protocol versions.
var ErrVersion = errors.New("rfp: protocol versions differ")

// ErrNotJakiro says the peer does not speak this protocol.
var ErrNotJakiro = errors.New("rfp: peer does not speak the Jakiro protocol")

// ParseHello decodes a client's private data.
func ParseHello(b []byte) (Hello, error) {
	if len(b) < helloSize || binary.LittleEndian.Uint32(b) != helloMagic {
		return Hello{}, ErrNotJakiro
	}
	h := Hello{Version: b[4], Slots: binary.LittleEndian.Uint16(b[6:])}
	if b[5]&^helloAuth != 0 {
		return h, fmt.Errorf("rfp: hello has unknown flags %#x", b[5]&^helloAuth)
	}
	if b[5]&helloAuth != 0 {
		if len(b) < helloAuthSize {
			return h, fmt.Errorf("rfp: hello says it carries a token proof but has %d bytes, want %d", len(b), helloAuthSize)
		}
		copy(h.Proof[:], b[helloSize:])
		h.HasProof = true
	}
	if h.Version != Version {
		return h, fmt.Errorf("%w: client speaks version %d, server %d", ErrVersion, h.Version, Version)
	}
	return h, nil
}

// Welcome is the server's handshake private data: the grant's geometry and
// descriptor.
type Welcome struct {
	Layout   Layout
	Grant    fabric.Desc
	ClientID uint32
	// Refused, when not zero, says the server refused the client (and
	// closes the connection); nothing else is set then.
	Refused Refusal
}

// Refusal is why a server refused a client at the handshake.
type Refusal uint8

const (
	// RefusedFull: the server has its maximum of clients.
	RefusedFull Refusal = 1
	// RefusedAuth: the client gave no token, or a wrong one.
	RefusedAuth Refusal = 2
	// RefusedVersion: the client speaks another protocol version (the
	// welcome carries the server's, which an older client reports).
	RefusedVersion Refusal = 3
)

func (r Refusal) err() error {
	switch r {
	case RefusedFull:
		return ErrServerFull
	case RefusedAuth:
		return ErrAuth
	case RefusedVersion:
		return fmt.Errorf("rfp: server refused the connection: it speaks protocol version %d and the client does not", Version)
	}
	return fmt.Errorf("rfp: server refused the connection (reason %d)", r)
}

const welcomeSize = 4 + 4 + 5*4 + fabric.DescSize + 4

// Put encodes w.
func (w Welcome) Put() []byte {
	b := make([]byte, welcomeSize)
	le := binary.LittleEndian
	le.PutUint32(b, welcomeMagic)
	b[4] = Version
	b[5] = byte(w.Refused)
	if w.Refused != 0 {
		return b
	}
	le.PutUint32(b[8:], uint32(w.Layout.Partitions))
	le.PutUint32(b[12:], uint32(w.Layout.Slots))
	le.PutUint32(b[16:], uint32(w.Layout.MaxValue))
	le.PutUint32(b[20:], uint32(w.Layout.ReqRing))
	le.PutUint32(b[24:], uint32(w.Layout.RespRing))
	w.Grant.Put(b[28:])
	le.PutUint32(b[28+fabric.DescSize:], w.ClientID)
	return b
}

// ParseWelcome decodes and validates the server's private data. A
// refusal comes back as its error (ErrServerFull, ErrAuth).
func ParseWelcome(b []byte) (Welcome, error) {
	le := binary.LittleEndian
	if len(b) < welcomeSize || le.Uint32(b) != welcomeMagic {
		return Welcome{}, ErrNotJakiro
	}
	if b[4] != Version {
		return Welcome{}, fmt.Errorf("%w: server speaks version %d, client %d", ErrVersion, b[4], Version)
	}
	if r := Refusal(b[5]); r != 0 {
		return Welcome{Refused: r}, r.err()
	}
	var w Welcome
	w.Layout = Layout{
		Partitions: int(le.Uint32(b[8:])),
		Slots:      int(le.Uint32(b[12:])),
		MaxValue:   int(le.Uint32(b[16:])),
		ReqRing:    int(le.Uint32(b[20:])),
		RespRing:   int(le.Uint32(b[24:])),
	}
	if err := w.Layout.Validate(); err != nil {
		return w, err
	}
	w.Grant, _ = fabric.ParseDesc(b[28:])
	if w.Grant.Len < uint64(w.Layout.Size()) {
		return w, fmt.Errorf("rfp: grant of %d bytes cannot hold layout of %d", w.Grant.Len, w.Layout.Size())
	}
	w.ClientID = le.Uint32(b[28+fabric.DescSize:])
	return w, nil
}
