package servertest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/server"
)

const envListen = "JAKIRO_SERVERTEST_LISTEN"

// Listen is the listen URL Start handed this process, "" if Start did not
// launch it.
func Listen() string { return os.Getenv(envListen) }

// ServeIfChild turns this process into a small server (one partition,
// 16 MiB) when Start launched it, and never returns then.
func ServeIfChild() {
	if listen := Listen(); listen != "" {
		os.Exit(Serve(server.Config{Listen: listen, Partitions: 1, Memory: 16 << 20, MaxValue: 4 << 10}))
	}
}

// Serve runs a server with cfg until SIGTERM and returns the process's
// exit status. It prints "READY <addr>" on stdout once it listens, or
// "ERROR <reason>" if it cannot: the line Start waits for.
func Serve(cfg server.Config) int {
	srv, err := server.New(cfg)
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	fmt.Println("READY", srv.Addr())
	err = srv.Serve(ctx)
	srv.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "servertest: serve:", err)
		return 1
	}
	return 0
}

// Proc is a server process.
type Proc struct {
	Addr string // where it listens (a tcp port 0 resolved)
	cmd  *exec.Cmd
	done chan struct{} // closed once it has exited; err is set then
	err  error
}

// Start runs this test binary as a server listening on listen (a fabric
// URL; tcp port 0 picks a free port), with env added to its environment,
// and waits until it is ready. Cleanup sends SIGTERM to a server still
// running and fails the test unless it exits cleanly.
func Start(t testing.TB, listen string, env ...string) *Proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), envListen+"="+listen), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Proc{cmd: cmd, done: make(chan struct{})}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		for sc.Scan() {
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	select {
	case l := <-line:
		addr, ok := strings.CutPrefix(l, "READY ")
		if !ok {
			p.Kill()
			t.Fatalf("server on %s: %q", listen, l)
		}
		p.Addr = addr
	case <-time.After(30 * time.Second):
		p.Kill()
		t.Fatalf("server on %s not ready in 30s", listen)
	}
	t.Cleanup(func() {
		if !p.Exited() {
			p.Term(t)
		}
	})
	return p
}

// Signal sends sig to the server (SIGSTOP and SIGCONT pause and resume it).
func (p *Proc) Signal(sig os.Signal) { p.cmd.Process.Signal(sig) }

// Stop stops the server (SIGSTOP) and waits until every thread of it has
// stopped: kill(2) returns before a thread running on another core takes
// the signal, and a partition spinning there could answer a request sent
// meanwhile.
func (p *Proc) Stop(t testing.TB) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGSTOP)
	deadline := time.Now().Add(5 * time.Second)
	for !stopped(p.cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("server %d still running 5 s after SIGSTOP", p.cmd.Process.Pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// stopped: every thread of process pid is in the stopped state.
func stopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// The state follows the command name, which ends at the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) || stat[i+2] != 'T' {
			return false
		}
	}
	return true
}

// Kill ends the server at once, as a crash would, and waits for it.
func (p *Proc) Kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// Exited reports whether the server process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Term sends SIGTERM and returns how long the server took to exit. It
// fails the test on an unclean exit, or if the server ignores SIGTERM for
// 10s (then it is killed).
func (p *Proc) Term(t testing.TB) time.Duration {
	t.Helper()
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("server did not shut down cleanly on SIGTERM: %v", p.err)
		}
	case <-time.After(10 * time.Second):
		p.Kill()
		t.Error("server ignored SIGTERM for 10s")
	}
	return time.Since(start)
}
