package tcp

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Protocol identity, checked first in both handshake messages so that a
// stray client or server gets a clear error instead of garbage.
const (
	magic   = "JAKIROtc"
	version = 1
)

// Handshake message kinds.
const (
	kindHello      = 1 // dialer → acceptor: depth, private data
	kindAccept     = 2 // acceptor → dialer: depth, private data
	kindReject     = 3 // acceptor closed the Setup
	kindBadVersion = 4 // acceptor speaks another version (in the header)
	kindBadHello   = 5 // acceptor could not parse the hello; data is why
)

// hsSize is the fixed handshake header: magic[8] version:u16 kind:u8
// dataLen:u8 depth:u32, followed by dataLen bytes.
const hsSize = 16

// Frame types after the handshake.
const (
	frameRead  = 1 // reqSize header
	frameWrite = 2 // reqSize header + len payload bytes
	frameResp  = 3 // respSize header (+ len payload bytes for a good READ)
	frameRing  = 4 // reqSize header, key = doorbell index; no response
)

// reqSize: type:u8 pad[3] key:u32 addr:u64 len:u32.
const reqSize = 20

// respSize: type:u8 status:u8.
const respSize = 2

// Response status.
const (
	statusOK     = 0
	statusAccess = 1 // key unknown or range outside the region
)

const (
	// MaxOpLen is the longest single READ or WRITE. It bounds what an
	// untrusted length field can make the target read or skip.
	MaxOpLen = 1 << 30
	// maxQueueDepth bounds Options.QueueDepth, and the peer's declared
	// depth that sizes the NIC's response ring.
	maxQueueDepth = 1 << 16
	// handshakeTimeout bounds how long a listener waits for a hello,
	// and a dialer for the answer when its context sets no deadline.
	handshakeTimeout = 3 * time.Second
	// dialWait bounds a dialer's handshake when its context does not.
	dialWait = 10 * time.Second
	// closeFlushTimeout bounds how long Close waits to send the
	// responses to requests its NIC already applied.
	closeFlushTimeout = time.Second
	// rxBufSize is a poller's read buffer; ownBufSize a connection's,
	// for the reads Poll makes itself.
	rxBufSize  = 64 << 10
	ownBufSize = 16 << 10
	// keepLeft: a connection keeps an emptied rxLeft this small (a held
	// READ's, every op on a pumped connection) and frees a larger one.
	keepLeft = 1 << 10
	// rxBudget: a poller reads at most about this much of one
	// connection before it serves the others' events (poll.go).
	rxBudget = 256 << 10
	// directMin: a payload at least this long left is read straight
	// into its region, not through the read buffer.
	directMin = 4 << 10
	// outHigh: past this many staged bytes the NIC stops reading the
	// peer's requests until they drain. outKeep: a tx buffer that grew
	// beyond it is let go once empty.
	outHigh = 64 << 20
	outKeep = 256 << 10
)

// Failure detection: keepalive probes an idle connection after
// KeepAliveIdle; UserTimeout ends a connection whose sent data, or whose
// keepalive probes, stay unanswered that long (Linux lets it override
// the probe count). A vanished host is so reported within about
// UserTimeout; a closed or killed peer at once (FIN or RST).
const (
	KeepAliveIdle     = 2 * time.Second
	KeepAliveInterval = 1 * time.Second
	KeepAliveCount    = 5
	UserTimeout       = 10 * time.Second
)

type hsHeader struct {
	version uint16
	kind    uint8
	dataLen uint8
	depth   uint32
}

func putHS(b []byte, kind uint8, depth int, data []byte) []byte {
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint16(b, version)
	b = append(b, kind, uint8(len(data)))
	b = binary.LittleEndian.AppendUint32(b, uint32(depth))
	return append(b, data...)
}

// parseHS checks magic; the caller checks version and kind.
func parseHS(b []byte) (hsHeader, error) {
	if len(b) < hsSize || string(b[:8]) != magic {
		return hsHeader{}, fmt.Errorf("not a jakiro fabric/tcp peer (got %q)", b)
	}
	return hsHeader{
		version: binary.LittleEndian.Uint16(b[8:]),
		kind:    b[10],
		dataLen: b[11],
		depth:   binary.LittleEndian.Uint32(b[12:]),
	}, nil
}
