//go:build !race

package ycsb

const raceEnabled = false
