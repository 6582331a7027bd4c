package tcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabrictest"
)

// envVanish makes the test binary run vanishChild (see TestMain).
const envVanish = "JAKIRO_TCP_VANISH"

// TestHostVanishes checks that a peer whose host drops off the network
// (no FIN, no RST: its packets just stop) is detected by keepalive and
// TCP_USER_TIMEOUT. It runs in a child process inside a network namespace
// of its own, where taking the loopback interface down cuts both ends off
// without touching the host's network.
func TestHostVanishes(t *testing.T) {
	if testing.Short() {
		t.Skip("takes about KeepAliveIdle+KeepAliveCount*KeepAliveInterval; skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command to configure the namespace's loopback")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envVanish+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child in its own network namespace: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

func vanishChild() error {
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set lo up: %v: %s", err, out)
	}
	d, a, err := connectPlain(1 << 20)
	if err != nil {
		return err
	}
	if err := fabric.Write(d.c, d.mine, 0, d.peer, 0, 64); err != nil {
		return err
	}
	// One side idle, the other with a READ outstanding.
	op := fabric.Op{Kind: fabric.OpRead, ID: 1, Local: a.mine, Len: 1 << 20, Remote: a.peer}
	if out, err := exec.Command("ip", "link", "set", "lo", "down").CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set lo down: %v: %s", err, out)
	}
	start := time.Now()
	if err := a.c.Post([]fabric.Op{op}); err != nil {
		return err
	}
	limit := UserTimeout + KeepAliveIdle + KeepAliveCount*KeepAliveInterval + 5*time.Second
	for _, s := range []side{d, a} {
		select {
		case <-s.c.Done():
		case <-time.After(limit - time.Since(start)):
			return fmt.Errorf("Done not closed %v after the host vanished", limit)
		}
		if err := s.c.Err(); !errors.Is(err, fabric.ErrPeerGone) {
			return fmt.Errorf("Err = %v, want ErrPeerGone", err)
		}
	}
	took := time.Since(start)
	var cs [2]fabric.Completion
	for {
		n, err := a.c.Poll(cs[:])
		if n == 1 && !errors.Is(cs[0].Err, fabric.ErrPeerGone) {
			return fmt.Errorf("outstanding READ completed with %v", cs[0].Err)
		}
		if err != nil {
			break
		}
	}
	d.c.Close()
	a.c.Close()
	fmt.Printf("both ends reported the vanished host within %v\n", took.Round(time.Millisecond))
	return nil
}

// connectPlain is pair without a testing.TB, for child processes.
func connectPlain(size int) (d, a side, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := fabric.Listen("tcp://127.0.0.1:0", fabric.Options{})
	if err != nil {
		return d, a, err
	}
	defer ln.Close()
	p, err := fabrictest.Connect(ctx, ln, fabric.Options{}, size, size, nil)
	if err != nil {
		return d, a, err
	}
	return side{c: p.D, mine: p.DReg, peer: p.ToA}, side{c: p.A, mine: p.AReg, peer: p.ToD}, nil
}
