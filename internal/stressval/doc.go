// Package stressval is the self-validating value format of
// `jakiro-bench stress`: a value says which key it belongs to, who wrote
// it, which of that writer's versions it is and how long it is, under a
// checksum, so a reader can tell a valid value from a torn, foreign or
// corrupted one without knowing what was written.
//
// A value of at least HeaderSize bytes is
//
//	checksum u32 | writer u32 | version u64 | length u32 | filler
//
// (little endian). The checksum is xxhash64 of the key and every byte
// after the checksum, folded to 32 bits; the filler is a pseudo-random
// stream seeded by key, writer and version, so two values spliced
// together fail the checksum. Shorter values cannot hold a header: their
// bytes are a function of key and length only (Short), which still
// catches a wrong key, a wrong length or garbage, but carries no version.
package stressval
