package kv

import "strconv"

// Status is the outcome of a partition operation.
type Status uint8

const (
	// StatusOK: the operation succeeded.
	StatusOK Status = iota
	// StatusNotFound: the key is absent (never stored, deleted, expired or
	// evicted).
	StatusNotFound
	// StatusTooLarge: Put's value exceeds Config.MaxValue, or Get's dst is
	// shorter than the value (Get then returns the value's length).
	StatusTooLarge
	// StatusNoMemory: ModeStore only, the partition is full.
	StatusNoMemory
	// StatusBadKey: the key is empty or longer than MaxKeyLen bytes.
	StatusBadKey
	// StatusNotStored: a conditional store's condition failed: Add of a
	// key that exists; Replace, Append or Prepend of one that does not.
	StatusNotStored
	// StatusExists: a compare-and-swap found another version.
	StatusExists
	// StatusNotNumeric: Incr or Decr of a value that is not a decimal
	// unsigned 64-bit number.
	StatusNotNumeric
)

var statusNames = [...]string{
	StatusOK:         "ok",
	StatusNotFound:   "not found",
	StatusTooLarge:   "too large",
	StatusNoMemory:   "out of memory",
	StatusBadKey:     "bad key",
	StatusNotStored:  "not stored",
	StatusExists:     "exists",
	StatusNotNumeric: "non-numeric value",
}

// String returns a short lower-case description, e.g. "not found".
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}
