package bytesize

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits are the suffixes Parse accepts. All are binary (powers of
// 1024), as with memcached's -m and -I: "4k", "4KB" and "4KiB" all mean
// 4096 bytes.
var sizeUnits = []struct {
	names []string
	mult  int64
}{
	{[]string{"", "b"}, 1},
	{[]string{"k", "kb", "kib"}, 1 << 10},
	{[]string{"m", "mb", "mib"}, 1 << 20},
	{[]string{"g", "gb", "gib"}, 1 << 30},
	{[]string{"t", "tb", "tib"}, 1 << 40},
	{[]string{"p", "pb", "pib"}, 1 << 50},
}

// Parse parses a byte size such as "64MiB", "1GiB", "512KiB", "1000",
// "1.5GiB", "4k" or "4KB". Units are case-insensitive and binary (K = 1024);
// a space may separate number and unit. Fractions are allowed with a unit
// and rounded to the nearest byte. Negative sizes, a fraction of a byte,
// unknown units and sizes above 2^63-1 are errors.
func Parse(s string) (int64, error) {
	in := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("kv: empty size")
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	if num == "" {
		if strings.HasPrefix(s, "-") {
			return 0, fmt.Errorf("kv: size %q is negative", in)
		}
		return 0, fmt.Errorf("kv: size %q does not start with a number", in)
	}
	mult := int64(-1)
	for _, u := range sizeUnits {
		for _, n := range u.names {
			if unit == n {
				mult = u.mult
			}
		}
	}
	if mult < 0 {
		return 0, fmt.Errorf("kv: size %q has unknown unit %q (use B, KiB, MiB, GiB, TiB; K/KB and friends mean the same)", in, s[i:])
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("kv: size %q is too large", in)
		}
		if n > math.MaxInt64/mult {
			return 0, fmt.Errorf("kv: size %q is too large", in)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("kv: size %q: bad number %q", in, num)
	}
	if mult == 1 {
		return 0, fmt.Errorf("kv: size %q is not a whole number of bytes", in)
	}
	v := math.Round(f * float64(mult))
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("kv: size %q is too large", in)
	}
	return int64(v), nil
}

// Format formats n bytes with the largest binary unit that fits: exact
// multiples as integers ("1GiB", "4KiB", "1000B"), other values rounded to
// at most two decimals ("1.5GiB", "953.67MiB"). Parse(Format(n))
// gives n back whenever the decimals are exact.
func Format(n int64) string {
	if n < 0 {
		if n == math.MinInt64 {
			return "-8192PiB"
		}
		return "-" + Format(-n)
	}
	names := [...]string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	for i := len(names) - 1; i > 0; i-- {
		mult := int64(1) << (10 * i)
		if n < mult {
			continue
		}
		if n%mult == 0 {
			return strconv.FormatInt(n/mult, 10) + names[i]
		}
		s := strconv.FormatFloat(float64(n)/float64(mult), 'f', 2, 64)
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		return s + names[i]
	}
	return strconv.FormatInt(n, 10) + "B"
}
