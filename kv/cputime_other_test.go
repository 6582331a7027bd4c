//go:build !unix

package kv

import "time"

var epoch = time.Now()

// threadTime falls back to wall time where there is no thread CPU clock.
func threadTime() int64 { return int64(time.Since(epoch)) }
