package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorsNameTheFix runs the mistakes a newcomer makes and checks
// the message says what is wrong and what to do.
func TestErrorsNameTheFix(t *testing.T) {
	dir := shortTempDir(t)
	addr := startServer(t)

	missing := "shm://" + filepath.Join(dir, "none.sock")

	// A socket file left by a server that died: bound, never unlinked.
	stalePath := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: stalePath, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	stale := "shm://" + stalePath

	notSock := filepath.Join(dir, "file.sock")
	if err := os.WriteFile(notSock, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}

	// A tcp port nobody listens on: one the kernel just gave and took back.
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "tcp://" + tl.Addr().String()
	tl.Close()

	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no server", []string{"get", "k", "--addr", missing}, exitError,
			[]string{"no server at " + missing, "is `jakiro server --listen " + missing + "` running?", "shm:///tmp/jakiro.sock by default"}},
		{"no server at the default address", []string{"get", "k"}, exitError, nil}, // checked below: depends on this host
		{"stale socket, client", []string{"get", "k", "--addr", stale}, exitError,
			[]string{"no server listens on " + stalePath, "left over from a server that stopped", "jakiro server --listen " + stale}},
		{"tcp refused", []string{"stats", "--addr", refused}, exitError,
			[]string{"no server at " + refused + " (connection refused)", "jakiro server --listen " + refused}},
		{"rdma not compiled in, client", []string{"get", "k", "--addr", "rdma://127.0.0.1:7700"}, exitError,
			[]string{"rdma:// is not compiled into this binary", "make build-rdma"}},
		{"rdma not compiled in, server", []string{"server", "--listen", "rdma://127.0.0.1:7700"}, exitError,
			[]string{"rdma:// is not compiled into this binary", "make build-rdma"}},
		{"unknown scheme", []string{"get", "k", "--addr", "udp://127.0.0.1:1"}, exitError,
			[]string{`unknown fabric "udp://"`, "shm://, tcp://"}},
		{"path without scheme", []string{"get", "k", "--addr", "/tmp/jakiro.sock"}, exitError,
			[]string{"did you mean shm:///tmp/jakiro.sock?"}},
		{"host:port without scheme", []string{"get", "k", "--addr", "127.0.0.1:7700"}, exitError,
			[]string{"did you mean tcp://127.0.0.1:7700?"}},
		{"server on a live server's socket", []string{"server", "--listen", addr}, exitError,
			[]string{"another server listens on " + strings.TrimPrefix(addr, "shm://"), "--listen another path"}},
		{"server on a file that is not a socket", []string{"server", "--listen", "shm://" + notSock}, exitError,
			[]string{notSock + " exists and is not a socket", "remove it"}},
		{"server in a missing directory", []string{"server", "--listen", "shm://" + filepath.Join(dir, "no", "such.sock")}, exitError,
			[]string{"its directory does not exist"}},
		{"unknown mode", []string{"get", "k", "--mode", "fetch", "--addr", addr}, exitError,
			[]string{"jakiro get: --mode", `"fetch"`, "want rfp, reply, hybrid or auto"}},
		{"bad rfs", []string{"get", "k", "--rfs", "lots", "--addr", addr}, exitError,
			[]string{"jakiro get: --rfs", "or auto"}},
		{"unknown flag", []string{"get", "k", "--bogus"}, exitError,
			[]string{"jakiro get: flag provided but not defined: -bogus", "`jakiro get --help`"}},
		{"mistyped flag", []string{"server", "--partitons", "2"}, exitError,
			[]string{"jakiro server: flag provided but not defined: -partitons; did you mean --partitions?"}},
		{"mistyped command", []string{"stat"}, exitError,
			[]string{`no command "stat"; did you mean stats?`}},
		{"flag before the command", []string{"--addr", addr, "get", "k"}, exitError,
			[]string{"flags go after the command", "jakiro get KEY --addr URL"}},
		{"unknown command", []string{"fetch", "k"}, exitError,
			[]string{`no command "fetch" (commands: server, put, get, del, stats`}},
		{"missing key", []string{"get", "--addr", addr}, exitError,
			[]string{"usage: jakiro get KEY", "`jakiro get --help`"}},
		{"value starting with -", []string{"put", "k", "-1", "--addr", addr}, exitError,
			[]string{"-1"}},
		{"not found", []string{"get", "nosuchkey", "--addr", addr}, exitNotFound,
			[]string{"key not found"}},
	} {
		r := jakiro(t, tc.args...)
		if r.code != tc.code {
			t.Errorf("%s: jakiro %q: %v, want exit %d", tc.name, tc.args, r, tc.code)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: jakiro %q: stderr lacks %q:\n%s", tc.name, tc.args, w, r.stderr)
			}
		}
	}

	// The default address: no server there on a test machine normally,
	// and then the message is the one the issue asks for.
	if _, err := os.Stat("/tmp/jakiro.sock"); os.IsNotExist(err) {
		r := jakiro(t, "get", "k")
		if !strings.Contains(r.stderr, "is `jakiro server` running? it listens on shm:///tmp/jakiro.sock by default") {
			t.Errorf("get with no server at the default address: %v", r)
		}
	} else {
		t.Log("/tmp/jakiro.sock exists here: the default-address message is not checked")
	}
}

// TestServerRemovesStaleSocket: a server started on a socket file left
// by one that died says so, removes it and serves.
func TestServerRemovesStaleSocket(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "jakiro.sock")
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	addr := "shm://" + path
	cmd := exec.Command(filepath.Join(binDir(t), "jakiro"), "server", "--listen", addr, "--memory", "64MiB", "--quiet")
	cmd.Env = cleanEnv()
	s := startProc(t, cmd, addr)
	defer s.stop(t)
	if r := jakiro(t, "put", "k", "v", "--addr", addr); r.code != 0 {
		t.Fatalf("put to a server that replaced a stale socket: %v", r)
	}
	if log := s.stderr.String(); !strings.Contains(log, "removing "+path+": a socket no server listens on") {
		t.Errorf("server log does not say it removed the stale socket:\n%s", log)
	}
}
