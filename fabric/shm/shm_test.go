package shm_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
	"github.com/jakiro-kv/jakiro/fabric/fabrictest"
	_ "github.com/jakiro-kv/jakiro/fabric/shm"
)

func TestMain(m *testing.M) {
	fabricbench.ServeChildIfRequested() // the benchmark's target process
	fabrictest.Main(m)
}

// sockAddr returns a fresh shm URL under a temporary directory. Unix
// socket paths are limited to 107 bytes; deep test names can exceed that
// under t.TempDir, so fall back to a short directory then.
func sockAddr(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "s.sock")
	if len(p) > 100 {
		d, err := os.MkdirTemp("", "jkshm")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		p = filepath.Join(d, "s.sock")
	}
	return "shm://" + p
}

func TestConformance(t *testing.T) {
	fabrictest.Run(t, sockAddr)
}
