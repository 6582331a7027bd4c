package ycsb

import (
	"os"
	"testing"

	"github.com/jakiro-kv/jakiro/server/servertest"
)

// The multi-server test runs servers as processes: this binary re-executed.
func TestMain(m *testing.M) {
	servertest.ServeIfChild()
	os.Exit(m.Run())
}
