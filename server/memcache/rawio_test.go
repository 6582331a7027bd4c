package memcache

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// A TCP connection is read and written raw; a connection without a file
// descriptor through its own Read and Write.
func TestRawIOWhereFD(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 1, false))
	nc, err := net.Dial("tcp", d.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if newRawIO(nc) == nil {
		t.Error("no raw reads and writes on a TCP connection")
	}
	if newRawIO(&fakeConn{}) != nil {
		t.Error("raw reads and writes on a connection without a file descriptor")
	}
}

// Answers many times the socket's buffer, read slowly, arrive whole and in
// order: raw writes go on after partial writes and waits for room.
func TestRawIOLongAnswers(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 2, false))
	c := dialDoor(t, d)
	val := bytes.Repeat([]byte("0123456789abcdef"), 60<<10/16)
	for i := range 4 {
		c.send(fmt.Sprintf("set k%d 0 0 %d\r\n%s\r\n", i, len(val), val))
		c.expect("STORED\r\n")
	}
	const n = 100
	var req bytes.Buffer
	for i := range n {
		fmt.Fprintf(&req, "get k%d\r\n", i%4)
	}
	go c.nc.Write(req.Bytes())
	c.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReaderSize(c.nc, 1024)
	for i := range n {
		want := fmt.Sprintf("VALUE k%d 0 %d\r\n%s\r\nEND\r\n", i%4, len(val), val)
		got := make([]byte, len(want))
		if i%10 == 0 {
			time.Sleep(10 * time.Millisecond) // let the server's writes fill the socket
		}
		if _, err := io.ReadFull(r, got); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if string(got) != want {
			t.Fatalf("answer %d differs", i)
		}
	}
}
