package shm_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"golang.org/x/sys/unix"
)

const (
	envFDLimitDial  = "JAKIRO_SHM_FDLIMIT_DIAL"
	envFDLimitSpare = "JAKIRO_SHM_FDLIMIT_SPARE"
)

func init() {
	if addr := os.Getenv(envFDLimitDial); addr != "" {
		os.Exit(fdLimitDialChild(addr))
	}
}

// fdLimitDialChild dials addr with a few descriptors to spare (the
// environment says how many).
func fdLimitDialChild(addr string) int {
	// The runtime's netpoller takes its descriptors first.
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		l.Close()
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 64, Max: 64}); err != nil {
		fmt.Println("setrlimit:", err)
		return 1
	}
	var held []int
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		held = append(held, fd)
	}
	spare, _ := strconv.Atoi(os.Getenv(envFDLimitSpare))
	for _, fd := range held[len(held)-spare:] {
		unix.Close(fd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := fabric.Dial(ctx, addr, fabric.Options{})
	if err == nil {
		_, err = s.Establish(ctx, nil)
	}
	fmt.Println("DIAL:", err)
	return 0
}

// A dialer out of descriptors is told so, and what to do (it said
// "handshake protocol error: truncated message (flags 0x40000008)").
func TestDialAtFDLimit(t *testing.T) {
	addr := sockAddr(t)
	ln, err := fabric.Listen(addr, fabric.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// With a few descriptors to spare the dial fails at its socket or
	// its domain; with a few more, the acceptor's descriptors do not fit.
	received := false
	for spare := 1; spare <= 8; spare++ {
		go func() {
			if s, err := ln.Accept(ctx); err == nil {
				if c, err := s.Establish(ctx, nil); err == nil {
					<-c.Done()
					c.Close()
				}
			}
		}()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envFDLimitDial+"="+addr, envFDLimitSpare+"="+strconv.Itoa(spare))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		t.Logf("%d spare: %s", spare, out)
		if strings.Contains(string(out), "DIAL: <nil>") {
			break
		}
		if !strings.Contains(string(out), "too many open files") || !strings.Contains(string(out), "ulimit -n") {
			t.Fatalf("a dial at the fd limit says %s; want too many open files, raise ulimit -n", out)
		}
		received = received || strings.Contains(string(out), "receiving the peer's descriptors")
	}
	if !received {
		t.Error("no dial failed for want of room for the acceptor's descriptors")
	}
}
