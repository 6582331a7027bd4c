package stressval

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// HeaderSize is the smallest value that carries writer and version.
const HeaderSize = 20

// Value is what a reader learns from a valid value.
type Value struct {
	Writer  uint32
	Version uint64
	Short   bool // under HeaderSize: no writer or version inside
}

// ErrInvalid marks a value that is not one a writer of this key wrote.
var ErrInvalid = errors.New("stressval: invalid value")

func sum(key, rest []byte) uint32 {
	var d xxhash.Digest
	d.Reset()
	d.Write(key)
	d.Write(rest)
	h := d.Sum64()
	return uint32(h) ^ uint32(h>>32)
}

// fill writes the pseudo-random stream seeded by seed into b (splitmix64).
func fill(b []byte, seed uint64) {
	x := seed
	for len(b) > 0 {
		x += 0x9E3779B97F4A7C15
		z := x
		z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
		z = (z ^ z>>27) * 0x94D049BB133111EB
		z ^= z >> 31
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], z)
		b = b[copy(b, w[:]):]
	}
}

// Append appends to dst the value of n bytes that writer writes as its
// version of key.
func Append(dst, key []byte, writer uint32, version uint64, n int) []byte {
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n] // every byte is written below
	v := dst[start:]
	if n < HeaderSize {
		fill(v, xxhash.Sum64(key)^uint64(n)<<56)
		return dst
	}
	le := binary.LittleEndian
	le.PutUint32(v[4:], writer)
	le.PutUint64(v[8:], version)
	le.PutUint32(v[16:], uint32(n))
	fill(v[HeaderSize:], xxhash.Sum64(key)^uint64(writer)<<40^version)
	le.PutUint32(v, sum(key, v[4:]))
	return dst
}

// Check validates v as a value of key; scratch (reused across calls)
// holds the expected filler of a short value.
func Check(key, v []byte, scratch *[HeaderSize]byte) (Value, error) {
	if len(v) < HeaderSize {
		want := scratch[:len(v)]
		fill(want, xxhash.Sum64(key)^uint64(len(v))<<56)
		if string(want) != string(v) {
			return Value{}, fmt.Errorf("%w: %d-byte short value %x is not key %q's", ErrInvalid, len(v), v, key)
		}
		return Value{Short: true}, nil
	}
	le := binary.LittleEndian
	if got := le.Uint32(v[16:]); got != uint32(len(v)) {
		return Value{}, fmt.Errorf("%w: says %d bytes, is %d", ErrInvalid, got, len(v))
	}
	if sum(key, v[4:]) != le.Uint32(v) {
		return Value{}, fmt.Errorf("%w: checksum of a %d-byte value of key %q", ErrInvalid, len(v), key)
	}
	return Value{Writer: le.Uint32(v[4:]), Version: le.Uint64(v[8:])}, nil
}
