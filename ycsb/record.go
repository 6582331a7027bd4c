package ycsb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Record encodings. The first byte says which; the common YCSB shapes get
// the short ones, because with the paper's 32 B values every header byte
// is a few percent of the fetch.
const (
	// encSingle: exactly one field named "field0"; the rest is its value.
	// The paper's workloads (fieldcount=1) cost one byte per record.
	encSingle = 0x01
	// encNumbered: every field is "field<N>": uvarint count, then per
	// field uvarint N, uvarint length, bytes.
	encNumbered = 0x02
	// encNamed: any names: uvarint count, then per field uvarint name
	// length, name, uvarint value length, value.
	encNamed = 0x03
)

const fieldPrefix = "field"

// ErrBadRecord is returned for a value that is not an encoded record.
var ErrBadRecord = errors.New("ycsb: value is not an encoded record")

// fieldNumber is N for a name "fieldN" (canonical decimal), else -1.
func fieldNumber(name string) int {
	s, ok := strings.CutPrefix(name, fieldPrefix)
	if !ok || s == "" || (len(s) > 1 && s[0] == '0') {
		return -1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// EncodeRecord appends the encoding of fields to dst. Fields are written in
// name order so equal records encode equally.
func EncodeRecord(dst []byte, fields map[string][]byte) []byte {
	if len(fields) == 1 {
		if v, ok := fields[fieldPrefix+"0"]; ok {
			return append(append(dst, encSingle), v...)
		}
	}
	names := make([]string, 0, len(fields))
	numbered := true
	for name := range fields {
		names = append(names, name)
		if fieldNumber(name) < 0 {
			numbered = false
		}
	}
	sort.Strings(names)
	if numbered {
		dst = append(dst, encNumbered)
	} else {
		dst = append(dst, encNamed)
	}
	dst = binary.AppendUvarint(dst, uint64(len(names)))
	for _, name := range names {
		if numbered {
			dst = binary.AppendUvarint(dst, uint64(fieldNumber(name)))
		} else {
			dst = binary.AppendUvarint(dst, uint64(len(name)))
			dst = append(dst, name...)
		}
		v := fields[name]
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		dst = append(dst, v...)
	}
	return dst
}

// DecodeRecord decodes b. With want non-empty only those fields are
// returned. Values are copies: b may be reused by the caller.
func DecodeRecord(b []byte, want []string) (map[string][]byte, error) {
	return decodeRecord(nil, b, want, false)
}

// fieldNames are "field0".."field63", so that decoding the common names
// allocates no string.
var fieldNames = func() (names [64]string) {
	for i := range names {
		names[i] = fieldPrefix + strconv.Itoa(i)
	}
	return names
}()

func fieldName(n uint64) string {
	if n < uint64(len(fieldNames)) {
		return fieldNames[n]
	}
	return fieldPrefix + strconv.FormatUint(n, 10)
}

// decodeRecord is DecodeRecord into out (cleared first; a new map if
// nil). With alias the values point into b, for callers that copied b
// for the purpose (one copy per batch, not per field) or whose map lives
// no longer than b (JakiroDB.Read's).
func decodeRecord(out map[string][]byte, b []byte, want []string, alias bool) (map[string][]byte, error) {
	own := func(v []byte) []byte {
		if alias {
			return v[:len(v):len(v)]
		}
		return append([]byte(nil), v...)
	}
	if len(b) == 0 {
		return nil, ErrBadRecord
	}
	keep := func(name string) bool {
		if len(want) == 0 {
			return true
		}
		for _, w := range want {
			if w == name {
				return true
			}
		}
		return false
	}
	if out == nil {
		out = make(map[string][]byte, 1)
	}
	// A reused map keeps its keys: most records have the fields the last
	// one had, and assigning over them costs less than a clear (3% of the
	// client's CPU with 1,024 go-ycsb threads). Keys the record lacks
	// are cleared after.
	stale := len(out)
	switch b[0] {
	case encSingle:
		if name := fieldNames[0]; keep(name) {
			// Assigned first: a map that held this field alone (the
			// usual case) costs one map operation, not a look and an
			// assignment.
			v := own(b[1:])
			if out[name] = v; len(out) > 1 {
				clear(out)
				out[name] = v
			}
		} else {
			clear(out)
		}
		return out, nil
	case encNumbered, encNamed:
	default:
		return nil, fmt.Errorf("%w: encoding %#x", ErrBadRecord, b[0])
	}
	numbered := b[0] == encNumbered
	p := 1
	uvarint := func() (uint64, error) {
		v, n := binary.Uvarint(b[p:])
		if n <= 0 {
			return 0, fmt.Errorf("%w: truncated at byte %d", ErrBadRecord, p)
		}
		p += n
		return v, nil
	}
	count, err := uvarint()
	if err != nil {
		return nil, err
	}
	if count > uint64(len(b)) { // each field takes at least one byte
		return nil, fmt.Errorf("%w: %d fields in %d bytes", ErrBadRecord, count, len(b))
	}
	kept := 0
	for i := uint64(0); i < count; i++ {
		var name string
		if numbered {
			n, err := uvarint()
			if err != nil {
				return nil, err
			}
			name = fieldName(n)
		} else {
			n, err := uvarint()
			if err != nil {
				return nil, err
			}
			if n > uint64(len(b)-p) {
				return nil, fmt.Errorf("%w: name overruns", ErrBadRecord)
			}
			name = string(b[p : p+int(n)])
			p += int(n)
		}
		n, err := uvarint()
		if err != nil {
			return nil, err
		}
		if n > uint64(len(b)-p) {
			return nil, fmt.Errorf("%w: value overruns", ErrBadRecord)
		}
		if keep(name) {
			out[name] = own(b[p : p+int(n)])
			kept++
		}
		p += int(n)
	}
	if p != len(b) {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrBadRecord, len(b)-p)
	}
	if stale > 0 && len(out) != kept {
		clear(out) // an earlier record's fields this one lacks
		return decodeRecord(out, b, want, alias)
	}
	return out, nil
}

// mergeRecord returns the encoding of old's fields overwritten by upd's.
func mergeRecord(dst, old []byte, upd map[string][]byte) ([]byte, error) {
	m, err := DecodeRecord(old, nil)
	if err != nil {
		return dst, err
	}
	for k, v := range upd {
		m[k] = v
	}
	return EncodeRecord(dst, m), nil
}
