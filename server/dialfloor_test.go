package server_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The socket floor under BenchmarkDial's shm join: one process asks
// another one question over a unix SEQPACKET socket (connect, 64 bytes
// each way, close), with nothing of Jakiro, no descriptors passed and no
// memory mapped. A shm join makes this exchange (its hello and accept,
// with memfds and doorbells in them), maps what it got, sends its first
// GET and closes; the floor bounds how fast it can be on this machine.

const floorMsg = 64

// socketFloorChild answers one message on each connection the way a
// server's accept loop would at the least: accept, read, write, close.
func socketFloorChild() int {
	l, err := net.Listen("unixpacket", os.Getenv("JAKIRO_E2E_ADDR"))
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	fmt.Println("READY")
	var b [floorMsg]byte
	for {
		c, err := l.Accept()
		if err != nil {
			return 0
		}
		n, err := c.Read(b[:])
		if err == nil {
			_, err = c.Write(b[:n])
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "socket floor child:", err) // the dialer reads EOF: say why
		}
		c.Close()
	}
}

// startSocketFloor starts socketFloorChild and returns its socket's path.
func startSocketFloor(b *testing.B) string {
	path := filepath.Join(b.TempDir(), "floor.sock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "JAKIRO_E2E_ROLE=sockfloor", "JAKIRO_E2E_ADDR="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "READY" {
		b.Fatalf("socket floor child: %q, %v", line, err)
	}
	return path
}

// socketFloorJoin is one exchange with the socket floor's child.
func socketFloorJoin(path string, buf []byte) error {
	c, err := net.Dial("unixpacket", path)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write(buf[:floorMsg]); err != nil {
		return err
	}
	n, err := c.Read(buf)
	if err == nil && n != floorMsg {
		err = fmt.Errorf("answer of %d bytes, want %d", n, floorMsg)
	}
	return err
}
