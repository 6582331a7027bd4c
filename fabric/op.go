package fabric

// OpKind says what a one-sided operation does.
type OpKind uint8

const (
	// OpRead copies remote bytes into the local region.
	OpRead OpKind = iota + 1
	// OpWrite copies local bytes into the remote region.
	OpWrite
)

func (k OpKind) String() string {
	switch k {
	case OpRead:
		return "READ"
	case OpWrite:
		return "WRITE"
	}
	return "op?"
}

// Op is one one-sided operation: Len bytes between Local[LocalOff:] and
// the remote region Remote at RemoteOff.
type Op struct {
	Kind      OpKind
	ID        uint64 // returned in the op's Completion
	Local     *Region
	LocalOff  int
	Len       int
	Remote    Desc
	RemoteOff uint64
}

// Completion reports the end of one posted Op.
type Completion struct {
	ID   uint64
	Kind OpKind
	Err  error // nil on success
}
