package stressval

import (
	"errors"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var scratch [HeaderSize]byte
	for _, n := range []int{0, 1, 19, 20, 21, 32, 40, 41, 64, 1000, 65536} {
		v := Append(nil, []byte("hot:3"), 7, 42, n)
		if len(v) != n {
			t.Fatalf("%d bytes, want %d", len(v), n)
		}
		got, err := Check([]byte("hot:3"), v, &scratch)
		if err != nil {
			t.Fatalf("%d B: %v", n, err)
		}
		if want := (Value{Writer: 7, Version: 42}); n >= HeaderSize && got != want {
			t.Fatalf("%d B: %+v, want %+v", n, got, want)
		}
		if n < HeaderSize && !got.Short {
			t.Fatalf("%d B: not short", n)
		}
	}
}

// TestDetects: every kind of damage a stress reader must flag.
func TestDetects(t *testing.T) {
	var scratch [HeaderSize]byte
	key := []byte("hot:3")
	a := Append(nil, key, 1, 10, 100)
	b := Append(nil, key, 2, 11, 100)
	torn := append(append([]byte(nil), a[:50]...), b[50:]...)
	flipped := append([]byte(nil), a...)
	flipped[77] ^= 0x10
	cases := map[string]struct {
		key, v []byte
	}{
		"torn (two writers spliced)": {key, torn},
		"bit flip":                   {key, flipped},
		"truncated":                  {key, a[:99]},
		"extended":                   {key, append(append([]byte(nil), a...), 0)},
		"another key's":              {[]byte("hot:4"), a},
		"another key's short":        {[]byte("hot:4"), Append(nil, key, 1, 1, 5)},
		"short garbage":              {key, []byte{1, 2, 3}},
		"zeros":                      {key, make([]byte, 64)},
	}
	for name, c := range cases {
		if _, err := Check(c.key, c.v, &scratch); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte("k"), Append(nil, []byte("k"), 1, 2, 40))
	f.Add([]byte("k"), []byte{0})
	f.Fuzz(func(t *testing.T, key, v []byte) {
		var scratch [HeaderSize]byte
		got, err := Check(key, v, &scratch)
		if err != nil || got.Short {
			return
		}
		// Whatever validates is exactly what its writer would write.
		if again := Append(nil, key, got.Writer, got.Version, len(v)); string(again) != string(v) {
			t.Fatalf("accepted %x, writer %d version %d writes %x", v, got.Writer, got.Version, again)
		}
	})
}
