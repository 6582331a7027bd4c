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
	}
	return fmt.Errorf("%w (status %d)", ErrServer, st)
}
