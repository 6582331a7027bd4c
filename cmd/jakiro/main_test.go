package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
)

// The tests in this package run the real binaries, built as `make build`
// builds them (without -race: they are what a user runs), against real
// servers started as `jakiro server` processes.

var built struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// repoRoot is the module's root directory.
func repoRoot(t testing.TB) string {
	d, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// gitCommit is what the Makefile passes the linker: HEAD, "+dirty" when
// the tree has uncommitted changes; "" without git.
func gitCommit(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += "+dirty"
	}
	return c
}

// binDir builds jakiro and jakiro-bench into a temporary directory, once
// per test binary, and returns it.
func binDir(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		root := repoRoot(t)
		dir, err := os.MkdirTemp("", "jakiro-bin")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		ldflags := "-X github.com/jakiro-kv/jakiro/cmd/internal/version.commit=" + gitCommit(root)
		for _, name := range []string{"jakiro", "jakiro-bench"} {
			cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", filepath.Join(dir, name), "./cmd/"+name)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				built.err = fmt.Errorf("go build ./cmd/%s: %v\n%s", name, err, out)
				return
			}
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

// shortTempDir is a temporary directory with a path short enough for a
// unix socket (t.TempDir's embeds the test's name).
func shortTempDir(t testing.TB) string {
	d, err := os.MkdirTemp("", "jk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// cleanEnv is this process's environment without JAKIRO_* settings, plus
// extra, so a developer's own settings do not leak into the tests.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JAKIRO_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// result is one finished command.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %q\nstderr: %q", r.code, r.stdout, r.stderr)
}

// runCmd runs cmd (stdin empty unless set) with a generous bound.
func runCmd(t testing.TB, cmd *exec.Cmd, timeout time.Duration) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if cmd.Stdin == nil {
		cmd.Stdin = strings.NewReader("")
	}
	cmd.WaitDelay = 5 * time.Second
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(timeout):
		cmd.Process.Kill()
		err = <-done
		t.Fatalf("%v still running after %v (killed)\nstdout: %s\nstderr: %s", cmd.Args, timeout, out.String(), errb.String())
	}
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return r
}

// jakiro runs the jakiro binary with args and a clean environment.
func jakiro(t testing.TB, args ...string) result {
	t.Helper()
	return jakiroIn(t, "", args...)
}

// jakiroIn is jakiro with stdin.
func jakiroIn(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir(t), "jakiro"), args...)
	cmd.Env = cleanEnv()
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	return runCmd(t, cmd, 2*time.Minute)
}

// serverProc is a `jakiro server` process.
type serverProc struct {
	cmd    *exec.Cmd
	addr   string
	stderr *lockedBuffer
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startProc starts a server process and waits until a client can dial
// addr (the address it listens on).
func startProc(t testing.TB, cmd *exec.Cmd, addr string) *serverProc {
	t.Helper()
	s := &serverProc{cmd: cmd, addr: addr, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.stderr, s.stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	go func() { s.err = cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		cl, err := client.Dial(ctx, addr)
		cancel()
		if err == nil {
			cl.Close()
			return s
		}
		select {
		case <-s.exited:
			t.Fatalf("%v exited before it listened (%v):\n%s", cmd.Args, s.err, s.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.cmd.Process.Kill()
			t.Fatalf("%v: no client could dial %s for a minute (last: %v):\n%s", cmd.Args, addr, err, s.stderr.String())
		}
	}
}

// stop sends SIGTERM and waits (bounded); a clean shutdown exits 0.
func (s *serverProc) stop(t testing.TB) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
		t.Errorf("%v: still running 30 s after SIGTERM (killed):\n%s", s.cmd.Args, s.stderr.String())
		return
	}
	if s.err != nil {
		t.Errorf("%v: after SIGTERM: %v (want exit 0):\n%s", s.cmd.Args, s.err, s.stderr.String())
	}
}

// startServer runs `jakiro server` on a fresh shm socket with small
// memory and returns its address; it is stopped when the test ends.
func startServer(t testing.TB, extra ...string) string {
	t.Helper()
	addr := "shm://" + filepath.Join(shortTempDir(t), "jakiro.sock")
	args := append([]string{"server", "--listen", addr, "--partitions", "2", "--memory", "64MiB", "--quiet"}, extra...)
	cmd := exec.Command(filepath.Join(binDir(t), "jakiro"), args...)
	cmd.Env = cleanEnv()
	s := startProc(t, cmd, addr)
	t.Cleanup(func() { s.stop(t) })
	return addr
}
