package rfp

import (
	"bytes"
	"errors"
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
)

// FuzzParseHello: whatever a client sends, parsing does not panic, and a
// hello that parses encodes back to the bytes it came from.
func FuzzParseHello(f *testing.F) {
	f.Add(Hello{Version: Version, Slots: 8}.Put())
	f.Add(Hello{Version: Version}.withAuth("token").Put())
	f.Add(Hello{Version: Version}.withAuth("token").Put()[:20])
	f.Add([]byte{0x4a, 0x4b, 0x52, 0x4f, 9, 0, 0, 0})
	f.Add(Hello{Version: 1, Slots: 8}.Put())
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHello(b)
		if errors.Is(err, ErrVersion) {
			checkVersionErr(t, err, b[4])
		}
		if err != nil {
			return
		}
		enc := h.Put()
		if !bytes.Equal(enc[:4], b[:4]) || !bytes.Equal(enc[6:], b[6:len(enc)]) || (enc[5]&helloAuth) != (b[5]&helloAuth) {
			t.Fatalf("hello %x parsed as %+v, which encodes as %x", b, h, enc)
		}
	})
}

// FuzzParseWelcome: whatever a server answers, parsing does not panic; a
// welcome that parses has a valid layout its grant can hold.
func FuzzParseWelcome(f *testing.F) {
	l, err := NewLayout(2, 8, 1024, 0, 0)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(Welcome{Layout: l, Grant: fabric.Desc{Addr: 4096, Len: uint64(l.Size()), Key: 7}, ClientID: 1}.Put())
	f.Add(Welcome{Layout: l, Grant: fabric.Desc{Len: 1}}.Put())
	f.Add(Welcome{Refused: RefusedAuth}.Put())
	f.Add(Welcome{Refused: 200}.Put())
	f.Add([]byte("JRKW"))
	v1 := Welcome{Layout: l, Grant: fabric.Desc{Len: uint64(l.Size())}}.Put()
	v1[4] = 1
	f.Add(v1)
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := ParseWelcome(b)
		if errors.Is(err, ErrVersion) {
			checkVersionErr(t, err, b[4])
		}
		if err != nil {
			if errors.Is(err, ErrAuth) && (len(b) < welcomeSize || b[5] != byte(RefusedAuth)) {
				t.Fatalf("%x read as an auth refusal", b)
			}
			return
		}
		if w.Layout.Validate() != nil || w.Grant.Len < uint64(w.Layout.Size()) {
			t.Fatalf("welcome %x accepted with layout %+v, grant %v", b, w.Layout, w.Grant)
		}
	})
}

// A peer of protocol version 1 (fixed slots) or 2 (records 8-byte
// aligned) is refused both ways with an error that wraps ErrVersion and
// names both versions.
func TestOldVersionsRefused(t *testing.T) {
	if Version != 3 {
		t.Fatalf("Version %d, want 3", Version)
	}
	for _, v := range []uint8{1, 2} {
		_, err := ParseHello(Hello{Version: v, Slots: 8}.Put())
		checkVersionErr(t, err, v)
		l, _ := NewLayout(2, 8, 1024, 0, 0)
		b := Welcome{Layout: l, Grant: fabric.Desc{Len: uint64(l.Size())}}.Put()
		b[4] = v
		_, err = ParseWelcome(b)
		checkVersionErr(t, err, v)
	}
}
