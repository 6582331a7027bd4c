package server

import "github.com/jakiro-kv/jakiro/kv"

// ParseSize reads sizes such as 64MiB, 1GiB, 4k or 1000 (bytes), for flags.
func ParseSize(s string) (int64, error) { return kv.ParseSize(s) }
