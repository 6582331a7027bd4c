// Package bytesize reads and writes byte sizes as flags and logs show them
// ("64MiB", "1.5GiB", "4k"): binary units, case-insensitive, exact round
// trips for what Format writes.
package bytesize
