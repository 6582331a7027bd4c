package fuzzseed

import "testing"

// FuzzEncodeReadBack checks Go's engine reads what Encode writes: the
// seed Add wrote to testdata runs as a corpus entry of this very target
// (a file the engine cannot parse fails `go test`).
func FuzzEncodeReadBack(f *testing.F) {
	Add(f, "quotes-and-bytes", []byte("a\"\x00\xff"), uint32(7), int(-3), byte(9), uint64(1<<63))
	f.Fuzz(func(t *testing.T, b []byte, u uint32, i int, c byte, w uint64) {})
}

func TestEncode(t *testing.T) {
	got := Encode([]byte("k\n"), uint32(7), int(-1), uint8(255), "s", true)
	want := "go test fuzz v1\n[]byte(\"k\\n\")\nuint32(7)\nint(-1)\nuint8(255)\nstring(\"s\")\nbool(true)\n"
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
