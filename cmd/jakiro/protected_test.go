package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// runServerArgs runs `jakiro server args...` up to the point it would
// serve: every case here must be refused before that.
func runServerArgs(t *testing.T, args ...string) error {
	t.Helper()
	app := &cli.App{Commands: []*cli.Command{serverCommand()}, ExitErrHandler: func(*cli.Context, error) {}}
	return app.Run(append([]string{"jakiro", "server"}, args...))
}

// Protected mode: no network listener beyond loopback without a token,
// and no listener on an empty host.
func TestProtectedMode(t *testing.T) {
	t.Setenv("JAKIRO_AUTH_TOKEN", "")
	t.Setenv("JAKIRO_AUTH_TOKEN_FILE", "")
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		says string
		or   string // also right: a binary without rdma:// says so first
	}{
		{[]string{"--listen", "tcp://0.0.0.0:1"}, "--insecure", ""},
		{[]string{"--listen", "tcp://:1"}, "every interface", ""},
		{[]string{"--listen", "tcp://:1", "--auth-token", "x"}, "every interface", ""},
		{[]string{"--listen", "rdma://10.0.0.1:1"}, "protected mode", "make build-rdma"},
		{[]string{"--auth-token", "x", "--auth-token-file", empty}, "both given", ""},
		{[]string{"--auth-token-file", empty}, "is empty", ""},
	} {
		err := runServerArgs(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.says) && (tc.or == "" || !strings.Contains(err.Error(), tc.or)) {
			t.Errorf("jakiro server %s = %v, want an error saying %q", strings.Join(tc.args, " "), err, tc.says)
		}
	}
}
