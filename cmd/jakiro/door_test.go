package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
)

// startDoorServer runs `jakiro server --memcached 127.0.0.1:0` with extra
// flags and returns its RFP and door addresses.
func startDoorServer(t *testing.T, extra ...string) (rfpAddr, doorAddr string) {
	t.Helper()
	rfpAddr = "shm://" + filepath.Join(shortTempDir(t), "jakiro.sock")
	args := append([]string{"server", "--listen", rfpAddr, "--partitions", "2", "--memory", "64MiB", "--quiet",
		"--memcached", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(filepath.Join(binDir(t), "jakiro"), args...)
	cmd.Env = cleanEnv()
	s := startProc(t, cmd, rfpAddr)
	t.Cleanup(func() { s.stop(t) })
	re := regexp.MustCompile(`memcached protocol on (127\.0\.0\.1:[0-9]+)`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(s.stderr.String()); m != nil {
			return rfpAddr, m[1]
		}
	}
	t.Fatalf("no door address logged:\n%s", s.stderr.String())
	return "", ""
}

// The door takes memcached's 1 MB items at its defaults (RFP clients keep
// --max-value, and are told a longer value is too large).
func TestDoorItemSizeDefault(t *testing.T) {
	rfpAddr, doorAddr := startDoorServer(t)
	nc, err := net.DialTimeout("tcp", doorAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(nc)
	line := func() string {
		s, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, n := range []int{66560, 700 << 10, 1 << 20} {
		v := strings.Repeat("v", n)
		fmt.Fprintf(nc, "set big 0 0 %d\r\n%s\r\nget big\r\n", n, v)
		if got := line(); got != "STORED\r\n" {
			t.Fatalf("set of %d bytes: %q", n, got)
		}
		if got := line(); got != fmt.Sprintf("VALUE big 0 %d\r\n", n) {
			t.Fatalf("get of %d bytes: %q", n, got)
		}
		b := make([]byte, n+len("\r\nEND\r\n"))
		if _, err := io.ReadFull(r, b); err != nil || string(b) != v+"\r\nEND\r\n" {
			t.Fatalf("get of %d bytes: %v", n, err)
		}
	}
	fmt.Fprintf(nc, "set big 0 0 %d\r\n%s\r\n", 1<<20+1, strings.Repeat("v", 1<<20+1))
	if got := line(); got != "SERVER_ERROR object too large for cache\r\n" {
		t.Fatalf("set over 1 MiB: %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, rfpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fmt.Fprintf(nc, "set mid 0 0 %d\r\n%s\r\n", 100<<10, strings.Repeat("m", 100<<10))
	if got := line(); got != "STORED\r\n" {
		t.Fatalf("set of 100 KiB: %q", got)
	}
	if _, err := cl.Get(ctx, []byte("mid")); !errors.Is(err, client.ErrTooLarge) {
		t.Fatalf("RFP get of a 100 KiB value over --max-value: %v, want ErrTooLarge", err)
	}
}
