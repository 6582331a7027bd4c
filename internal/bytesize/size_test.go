package bytesize

import (
	"math"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	good := map[string]int64{
		"64MiB": 64 << 20, "1GiB": 1 << 30, "512KiB": 512 << 10, "1000": 1000, "1.5GiB": 3 << 29,
		"4k": 4096, "4KB": 4096, "4K": 4096, "4kib": 4096, " 2 GiB ": 2 << 30, "1b": 1, "0": 0,
		"1TiB": 1 << 40, "1T": 1 << 40, "0.5M": 512 << 10, "1.25KiB": 1280, "8191PiB": 8191 << 50,
	}
	for in, want := range good {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := map[string]string{
		"": "empty", "abc": "does not start with a number", "-1": "negative", "-1GiB": "negative",
		"1.5": "whole number", "1XB": "unknown unit", "1e3": "unknown unit", "1..5M": "bad number",
		"99999999999999999999": "too large", "8192PiB": "too large", "9000000000000000000000.5K": "too large",
		"GiB": "does not start",
	}
	for in, want := range bad {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): error %v, want one saying %q", in, err, want)
		}
	}
}

func TestFormat(t *testing.T) {
	cases := map[int64]string{
		0: "0B", 1: "1B", 1000: "1000B", 1023: "1023B", 1024: "1KiB", 4096: "4KiB", 1536: "1.5KiB",
		1 << 30: "1GiB", 3 << 29: "1.5GiB", 1e9: "953.67MiB", 1 << 40: "1TiB", -(1 << 20): "-1MiB",
		math.MaxInt64: "8192PiB", math.MinInt64: "-8192PiB",
	}
	for n, want := range cases {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
	for _, n := range []int64{1, 1000, 1024, 1536, 64 << 20, 3 << 29, 5 << 40, 1280} {
		if back, err := Parse(Format(n)); err != nil || back != n {
			t.Errorf("round trip %d: %q -> %d, %v", n, Format(n), back, err)
		}
	}
}
