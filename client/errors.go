package client

import (
	"errors"
	"fmt"

	"github.com/jakiro-kv/jakiro/rfp"
)

var (
	ErrNotFound   = errors.New("jakiro: key not found")
	ErrTooLarge   = errors.New("jakiro: value too large")
	ErrNoMemory   = errors.New("jakiro: server out of memory")
	ErrBadKey     = errors.New("jakiro: bad key (1 to 250 bytes)")
	ErrBadRequest = errors.New("jakiro: server rejected the request as malformed")
	ErrServer     = errors.New("jakiro: server error")
	ErrClosed     = errors.New("jakiro: client closed")

	// ErrNotStored: a conditional store's condition failed: Add of a key
	// that exists; Replace, Append or Prepend of one that does not.
	ErrNotStored = errors.New("jakiro: not stored")
	// ErrExists: CompareAndSwap found the item at another version.
	ErrExists = errors.New("jakiro: item changed (version mismatch)")
	// ErrNotNumeric: Incr or Decr of a value that is not a decimal
	// unsigned 64-bit number.
	ErrNotNumeric = errors.New("jakiro: value is not a decimal number")
	// ErrBadResponse: an answer the protocol does not allow (a server of
	// another version).
	ErrBadResponse = errors.New("jakiro: malformed response")

	// ErrUnavailable: the key's server cannot be reached now. The error
	// names the server and wraps the cause (ErrConnLost, a dial error);
	// the client reconnects in the background, and the other servers'
	// keys are unaffected.
	ErrUnavailable = errors.New("jakiro: server unavailable")
	// ErrConnLost: the connection to a server broke (it stopped, or the
	// network failed); wrapped in ErrUnavailable with the fabric's cause.
	// An operation in flight then may or may not have taken effect.
	ErrConnLost = errors.New("jakiro: connection lost")
	// ErrAuth: Dial was refused for a missing or wrong token.
	ErrAuth = rfp.ErrAuth
	// ErrServerFull: Dial was refused because the server has its maximum
	// of clients (server --max-clients).
	ErrServerFull = rfp.ErrServerFull
)

func statusErr(st rfp.Status) error {
	switch st {
	case rfp.StatusOK:
		return nil
	case rfp.StatusNotFound:
		return ErrNotFound
	case rfp.StatusTooLarge:
		return ErrTooLarge
	case rfp.StatusNoMemory:
		return ErrNoMemory
	case rfp.StatusBadKey:
		return ErrBadKey
	case rfp.StatusBadRequest:
		return ErrBadRequest
	case rfp.StatusNotStored:
		return ErrNotStored
	case rfp.StatusExists:
		return ErrExists
	case rfp.StatusNotNumeric:
		return ErrNotNumeric
	}
	return fmt.Errorf("%w (status %d)", ErrServer, st)
}
