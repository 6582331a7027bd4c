package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// extServer is redis-server or memcached, started on loopback for one run.
type extServer struct {
	Name string
	Addr string // host:port
	cmd  *exec.Cmd
	done chan struct{}
}

// freePort asks the kernel for a loopback port nobody uses now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startExternal starts name ("redis" or "memcached") on 127.0.0.1 only,
// no persistence; memcached with threads worker threads (at least one, to
// match one Jakiro partition).
func startExternal(name string, threads int) (*extServer, error) {
	return startExternalIn(name, threads, false)
}

// startExternalIn is startExternal, the server the leader of a session of
// its own where ownSession is set (as serverOpts.OwnSession).
func startExternalIn(name string, threads int, ownSession bool) (*extServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := strconv.Itoa(port)
	var cmd *exec.Cmd
	switch name {
	case "redis":
		bin, err := exec.LookPath("redis-server")
		if err != nil {
			return nil, fmt.Errorf("redis-server not installed (make bench-deps): %w", err)
		}
		cmd = exec.Command(bin, "--bind", "127.0.0.1", "--port", p, "--save", "", "--appendonly", "no",
			"--protected-mode", "yes", "--daemonize", "no", "--loglevel", "warning", "--io-threads", "1")
	case "memcached":
		bin, err := exec.LookPath("memcached")
		if err != nil {
			return nil, fmt.Errorf("memcached not installed (make bench-deps): %w", err)
		}
		args := []string{"-l", "127.0.0.1", "-p", p, "-U", "0", "-t", strconv.Itoa(max(1, threads)), "-m", "512"}
		if os.Geteuid() == 0 {
			args = append(args, "-u", "nobody") // memcached refuses to run as root
		}
		cmd = exec.Command(bin, args...)
	default:
		return nil, fmt.Errorf("unknown server %q", name)
	}
	// Their logs would drown the progress lines; failures to start show
	// as a port that never opens.
	cmd.Stdout, cmd.Stderr = nil, nil
	if ownSession {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &extServer{Name: name, Addr: "127.0.0.1:" + p, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s exited at start", name)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("%s not listening on %s after 10s", name, s.Addr)
		}
	}
}

// Stop terminates the server (SIGTERM, then SIGKILL after 5s).
func (s *extServer) Stop() {
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}
