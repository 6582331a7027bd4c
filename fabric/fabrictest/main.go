package fabrictest

import (
	"fmt"
	"os"
	"testing"
)

// Environment of a re-executed test binary (see Main).
const (
	envRole = "FABRICTEST_ROLE" // which child role to play
	envAddr = "FABRICTEST_ADDR" // the parent's listen URL
	envDesc = "FABRICTEST_DESC" // hex Desc the intruder tries
)

var mainCalled bool

// Main must be called from the provider test's TestMain. In a process
// started by the cross-process case it plays the requested child role and
// exits; otherwise it runs the tests.
func Main(m *testing.M) {
	if role := os.Getenv(envRole); role != "" {
		if err := runChild(role, os.Getenv(envAddr), os.Getenv(envDesc)); err != nil {
			fmt.Fprintf(os.Stderr, "fabrictest child %q: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	mainCalled = true
	os.Exit(m.Run())
}
