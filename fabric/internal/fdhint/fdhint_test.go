package fdhint

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestExplain(t *testing.T) {
	for _, e := range []error{unix.EMFILE, unix.ENFILE} {
		err := Explain(fmt.Errorf("socket: %w", e))
		if !errors.Is(err, ErrTooManyFiles) || !strings.Contains(err.Error(), "raise ulimit -n") || !strings.Contains(err.Error(), "socket: ") {
			t.Errorf("Explain(%v) = %v", e, err)
		}
		if again := Explain(err); again != err {
			t.Errorf("explained twice: %v", again)
		}
	}
	other := errors.New("connection refused")
	if Explain(other) != other || Explain(nil) != nil {
		t.Error("Explain changed an error that is not about descriptors")
	}
	if err := AtLimit(); err != nil {
		t.Errorf("AtLimit = %v in a test process with descriptors to spare", err)
	}
}
