package fabric

import "fmt"

// CheckOp is the local check every provider makes of each op of a batch
// before posting any: a known kind, a local region that belongs to the
// connection (owned: each provider knows how to tell) and [LocalOff,
// LocalOff+Len) inside it. The error wraps ErrLocalAccess and names the op,
// whatever the provider.
func CheckOp(i int, op *Op, owned bool) error {
	switch {
	case op.Kind != OpRead && op.Kind != OpWrite:
		return opError(i, "unknown kind %d", op.Kind)
	case op.Local == nil:
		return opError(i, "no local region")
	case !owned:
		return opError(i, "region is closed or not of this connection")
	case op.Len < 0 || op.LocalOff < 0 || op.LocalOff > op.Local.Len()-op.Len:
		return opError(i, "[%d, +%d) outside the %d-byte region", op.LocalOff, op.Len, op.Local.Len())
	}
	return nil
}

func opError(i int, format string, args ...any) error {
	return fmt.Errorf("%w: op %d: %s", ErrLocalAccess, i, fmt.Sprintf(format, args...))
}
