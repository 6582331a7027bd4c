package fuzzseed

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Add adds a named seed to f's corpus; args are the fuzz function's
// arguments after *testing.T.
func Add(f *testing.F, name string, args ...any) {
	f.Helper()
	f.Add(args...)
	if os.Getenv("JAKIRO_FUZZ_WRITE_SEEDS") != "1" {
		return
	}
	dir := filepath.Join("testdata", "fuzz", f.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), Encode(args...), 0o644); err != nil {
		f.Fatal(err)
	}
}

// Encode renders values as a corpus file of Go's fuzzing engine
// ("go test fuzz v1" and one Go literal per line).
func Encode(args ...any) []byte {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%s)\n", strconv.Quote(string(v)))
		case string:
			fmt.Fprintf(&b, "string(%s)\n", strconv.Quote(v))
		case bool:
			fmt.Fprintf(&b, "bool(%t)\n", v)
		default:
			fmt.Fprintf(&b, "%T(%v)\n", v, v)
		}
	}
	return []byte(b.String())
}
