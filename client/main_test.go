package client_test

import (
	"os"
	"testing"

	"github.com/jakiro-kv/jakiro/server/servertest"
)

// The cluster tests run servers as processes: this binary re-executed.
func TestMain(m *testing.M) {
	servertest.ServeIfChild()
	os.Exit(m.Run())
}
