package server

import "github.com/jakiro-kv/jakiro/internal/bytesize"

// ParseSize reads sizes such as 64MiB, 1GiB, 4k or 1000 (bytes), for flags.
func ParseSize(s string) (int64, error) { return bytesize.Parse(s) }

// FormatSize writes n bytes as ParseSize reads them ("1GiB", "1.5MiB").
func FormatSize(n int64) string { return bytesize.Format(n) }
