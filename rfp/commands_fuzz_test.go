package rfp

import (
	"testing"

	"github.com/jakiro-kv/jakiro/internal/fuzzseed"
)

// FuzzCommandArgs: the extras of the memcached commands (commands.go), which
// the server decodes from what clients WRITE and the client from what the
// server left, never panic, and what decodes re-encodes to the same bytes.
func FuzzCommandArgs(f *testing.F) {
	store := make([]byte, StoreExtraLen+5)
	PutStoreArgs(store, StoreArgs{Mode: StoreAppend, Flags: 7, CAS: 99})
	copy(store[StoreExtraLen:], "value")
	fuzzseed.Add(f, "store-append", store)
	incr := make([]byte, IncrExtraLen)
	PutIncrArgs(incr, IncrArgs{Decr: true, Create: true, Delta: 5, Initial: 1, Flags: 3})
	fuzzseed.Add(f, "incr-create", incr)
	fuzzseed.Add(f, "store-mode-200", append([]byte{200}, store[1:]...))
	fuzzseed.Add(f, "incr-bool-2", append([]byte{2}, incr[1:]...))
	fuzzseed.Add(f, "short", []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		if a, v, ok := ParseStoreArgs(b); ok {
			if a.Mode >= maxStoreMode || len(v) != len(b)-StoreExtraLen {
				t.Fatalf("store args %+v, value of %d from %d bytes", a, len(v), len(b))
			}
			out := make([]byte, StoreExtraLen)
			PutStoreArgs(out, a)
			if string(out) != string(b[:StoreExtraLen]) {
				t.Fatalf("store args %+v re-encode to %x, were %x", a, out, b[:StoreExtraLen])
			}
		}
		if a, ok := ParseIncrArgs(b); ok {
			out := make([]byte, IncrExtraLen)
			PutIncrArgs(out, a)
			if string(out) != string(b) {
				t.Fatalf("incr args %+v re-encode to %x, were %x", a, out, b)
			}
		}
		if ver, flags, v, ok := ParseMeta(b); ok {
			out := make([]byte, MetaLen)
			PutMeta(out, ver, flags)
			if string(out) != string(b[:MetaLen]) || len(v) != len(b)-MetaLen {
				t.Fatal("meta does not round-trip")
			}
		}
		ParseIncrResult(b)
		ParseVersion(b)
	})
}
