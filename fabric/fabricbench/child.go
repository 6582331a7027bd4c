package fabricbench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// Environment of a re-executed binary that is to serve.
const (
	envServe  = "JAKIRO_FABRICBENCH_SERVE"  // listen URL
	envRegion = "JAKIRO_FABRICBENCH_REGION" // region size in bytes; "echo": ServeEcho
)

// ServeChildIfRequested turns this process into a Serve target when it was
// started by StartServer (a ServeEcho target by StartEcho), and never
// returns then; otherwise it returns at once. Call it first thing in main
// or TestMain.
func ServeChildIfRequested() {
	addr := os.Getenv(envServe)
	if addr == "" {
		return
	}
	echo := os.Getenv(envRegion) == "echo"
	size, err := strconv.Atoi(os.Getenv(envRegion))
	if err != nil && !echo {
		fmt.Fprintf(os.Stderr, "fabricbench child: region size: %v\n", err)
		os.Exit(2)
	}
	ln, err := fabric.Listen(addr, fabric.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "fabricbench child: %v\n", err)
		os.Exit(1)
	}
	// The parent holds our stdin: EOF means it stopped us or died.
	go func() {
		io.Copy(io.Discard, os.Stdin)
		ln.Close()
		os.Exit(0)
	}()
	fmt.Println("ready")
	serve := func() error { return Serve(ln, size) }
	if echo {
		serve = func() error { return ServeEcho(ln) }
	}
	if err := serve(); err != nil {
		fmt.Fprintf(os.Stderr, "fabricbench child: %v\n", err)
		os.Exit(1)
	}
	select {} // the stdin watcher exits
}

// Server is a Serve target running in a child process.
type Server struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	err   error
}

// StartServer re-executes the current binary (with args, e.g.
// "-test.run=^$" for a test binary) as a Serve target listening on addr,
// and waits until it listens.
func StartServer(addr string, regionSize int, args ...string) (*Server, error) {
	return start(addr, strconv.Itoa(regionSize), args)
}

// StartEcho re-executes the current binary (with args) as a ServeEcho
// target listening on addr, and waits until it listens.
func StartEcho(addr string, args ...string) (*Server, error) {
	return start(addr, "echo", args)
}

func start(addr, region string, args []string) (*Server, error) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envServe+"="+addr, envRegion+"="+region)
	cmd.Stderr = os.Stderr
	// Plain pipes rather than StdinPipe/StdoutPipe: we keep reading and
	// writing while Wait runs.
	inR, stdin, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdout, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		stdin.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, fmt.Errorf("fabricbench: start server: %w", err)
	}
	s := &Server{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
		io.Copy(io.Discard, stdout)
		stdout.Close()
	}()
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	select {
	case line := <-ready:
		if strings.TrimSpace(line) == "ready" {
			return s, nil
		}
		s.Stop()
		return nil, fmt.Errorf("fabricbench: server said %q instead of ready", line)
	case <-time.After(30 * time.Second):
		s.Stop()
		return nil, fmt.Errorf("fabricbench: server not ready after 30s")
	}
}

// Pid is the child's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Stop ends the child (EOF on its stdin, then SIGKILL if need be).
func (s *Server) Stop() error {
	s.stdin.Close()
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	return s.err
}
