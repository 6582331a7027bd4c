//go:build race

package ycsb

// raceEnabled: the race detector's runtime allocates on its own, so
// allocation counts mean nothing under it.
const raceEnabled = true
