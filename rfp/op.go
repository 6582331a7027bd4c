package rfp

// Op is a request's operation code.
type Op uint8

const (
	OpGet Op = iota + 1
	OpPut
	OpDelete
	OpStats // value of the response: the partition's stats as JSON
	OpGets  // GET that returns the item's version and flags (commands.go)
	OpGat   // OpGets that also sets a new TTL
	OpTouch // sets a new TTL
	OpStore // set/add/replace/append/prepend, with flags and cas
	OpIncr  // incr/decr
	OpFlush // drop every item of the partition, after TTL seconds
	maxOp
)

func (o Op) String() string {
	switch o {
	case OpGet:
		return "GET"
	case OpPut:
		return "PUT"
	case OpDelete:
		return "DELETE"
	case OpStats:
		return "STATS"
	case OpGets:
		return "GETS"
	case OpGat:
		return "GAT"
	case OpTouch:
		return "TOUCH"
	case OpStore:
		return "STORE"
	case OpIncr:
		return "INCR"
	case OpFlush:
		return "FLUSH"
	}
	return "op?"
}

// Request flags.
const (
	// FlagReply asks the server to WRITE the response into the client's
	// local region as well (server-reply and hybrid modes).
	FlagReply uint8 = 1 << iota
	// FlagRang says the client rang the partition's doorbell for this
	// request (bells.go): a partition that finds it knows who rang and
	// need not look at every session for the ringer.
	FlagRang
	// FlagPart: the record's value is one part of a value too long for
	// one record; the session keeps it until the FlagJoin record.
	FlagPart
	// FlagJoin: the record ends a request sent in parts: its value is the
	// last part, its key and op the request's.
	FlagJoin
)

// Limits of the wire format.
const (
	MaxKeyLen   = 250
	MaxValueLen = 1 << 20 // 1 MiB, memcached's default item limit; longer than a ring record, a value travels in parts and pieces
)
