package rfp

// Status is a response's outcome, 4 bits on the wire.
type Status uint8

const (
	StatusOK          Status = iota
	StatusNotFound           // GET or DELETE of a missing key
	StatusTooLarge           // value over the server's maximum
	StatusNoMemory           // store mode: no room
	StatusBadKey             // empty or over MaxKeyLen
	StatusBadRequest         // malformed record or unknown op
	StatusServerError        // anything else
	StatusNotStored          // a store's condition failed (add, replace, append, prepend)
	StatusExists             // cas: the item has another version
	StatusNotNumeric         // incr/decr of a value that is not a decimal number
	maxStatus
)

var statusNames = [...]string{"ok", "not found", "value too large", "out of memory", "bad key", "bad request", "server error",
	"not stored", "exists", "non-numeric value"}

func (s Status) String() string {
	if s < maxStatus {
		return statusNames[s]
	}
	return "status?"
}
