package fabrictest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// Layout of the regions in the cross-process case.
const (
	xpSize      = 64 << 10
	xpBlock     = 4096
	xpMarkerOff = 60000
	seedParent  = 31 // parent's region [0, xpBlock) before the grant
	seedChildW  = 32 // what the child WRITEs at parent [xpBlock, 2*xpBlock)
	seedChildR  = 33 // child's region [0, xpBlock), READ by the parent
	seedIntrude = 34
)

var (
	childOK  = []byte("CHILDOK!")
	parentOK = []byte("PARENTOK")
)

// testCrossProcess runs the peer in another process (this test binary,
// re-executed): one-sided ops both ways, isolation between connections of
// different processes, and detection of a SIGKILLed peer.
func testCrossProcess(t *testing.T, newAddr func(*testing.T) string) {
	if !mainCalled {
		t.Fatal("fabrictest.Main was not called from TestMain: the cross-process case cannot re-execute the test binary")
	}
	ln := listen(t, newAddr, fabric.Options{})

	t.Run("ReadWriteAndIsolation", func(t *testing.T) {
		ctx := ctxFor(t)
		rw := startChild(t, "rw", ln.Addr(), "")
		c, r, cd, err := acceptChild(ctx, ln, rw, func(b []byte) { copy(b, pattern(seedParent, xpBlock)) })
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		mem := r.Bytes()
		if err := eventuallyOr(mem, xpMarkerOff, childOK, rw.done); err != nil {
			t.Fatalf("%v\n%s", err, rw.output())
		}
		if err := equal("child's WRITE at the parent", mem[xpBlock:2*xpBlock], pattern(seedChildW, xpBlock)); err != nil {
			t.Fatal(err)
		}
		if err := equal("parent's own data", mem[:xpBlock], pattern(seedParent, xpBlock)); err != nil {
			t.Fatal(err)
		}

		// A second child process holding its own connections tries the
		// first child's grant: it must get ErrRemoteAccess and change
		// nothing.
		before := bytes.Clone(mem)
		var b [fabric.DescSize]byte
		r.Desc().Put(b[:])
		in := startChild(t, "intruder", ln.Addr(), hex.EncodeToString(b[:]))
		for i := 0; i < 2; i++ {
			ic, _, _, err := acceptChild(ctx, ln, in, nil)
			if err != nil {
				t.Fatalf("intruder conn %d: %v", i, err)
			}
			defer ic.Close()
		}
		if err := in.wait(caseTimeout); err != nil {
			t.Fatal(err)
		}
		if err := equal("first child's region after the intruder", mem, before); err != nil {
			t.Fatal(err)
		}

		// The parent READs the child's region and releases it.
		local, err := c.Alloc(xpBlock)
		if err != nil {
			t.Fatal(err)
		}
		if err := execOK(c, read(local, 0, cd, 0, xpBlock, 1)); err != nil {
			t.Fatalf("%v (conn: %v)\n%v", err, c.Err(), rw.wait(caseTimeout))
		}
		if err := equal("parent READ of the child's region", local.Bytes(), pattern(seedChildR, xpBlock)); err != nil {
			t.Fatal(err)
		}
		copy(local.Bytes(), parentOK)
		if err := execOK(c, write(local, 0, cd, xpMarkerOff, len(parentOK), 2)); err != nil {
			// The child's side of the story: did it end, and why?
			t.Fatalf("%v (conn: %v)\n%v", err, c.Err(), rw.wait(caseTimeout))
		}
		if err := rw.wait(caseTimeout); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("KillPeer", func(t *testing.T) {
		ctx := ctxFor(t)
		v := startChild(t, "victim", ln.Addr(), "")
		c, r, cd, err := acceptChild(ctx, ln, v, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Wait until the victim is visibly busy, then kill it mid-stream.
		deadline := time.Now().Add(caseTimeout)
		for binary.LittleEndian.Uint64(r.Bytes()) < 100 {
			select {
			case <-v.done:
				t.Fatalf("victim exited on its own\n%s", v.output())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatal("victim made no progress")
			}
			time.Sleep(time.Millisecond)
		}
		if err := v.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		took, err := waitDone(c, goneTimeout)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("SIGKILLed peer reported after %v", took)
		if err := c.Err(); !errors.Is(err, fabric.ErrPeerGone) {
			t.Fatalf("Err: %v, want ErrPeerGone", err)
		}
		if err := opFailsGone(c, read(r, 0, cd, 0, 8, 1)); err != nil {
			t.Fatal(err)
		}
	})
}

// child is a re-executed test binary playing a role.
type child struct {
	role string
	cmd  *exec.Cmd
	out  bytes.Buffer // written by exec until done is closed
	done chan struct{}
	err  error
}

func startChild(t *testing.T, role, addr, desc string) *child {
	t.Helper()
	ch := &child{role: role, done: make(chan struct{})}
	// -test.run=^$ keeps the child from running tests should Main's hook
	// ever be missing.
	ch.cmd = exec.Command(os.Args[0], "-test.run=^$")
	ch.cmd.Env = append(os.Environ(), envRole+"="+role, envAddr+"="+addr, envDesc+"="+desc)
	ch.cmd.Stdout = &ch.out
	ch.cmd.Stderr = &ch.out
	if err := ch.cmd.Start(); err != nil {
		t.Fatalf("start child %s: %v", role, err)
	}
	go func() {
		ch.err = ch.cmd.Wait()
		close(ch.done)
	}()
	t.Cleanup(func() {
		select {
		case <-ch.done:
		default:
			ch.cmd.Process.Kill()
			<-ch.done
		}
	})
	return ch
}

// output is the child's combined output; only once it exited.
func (ch *child) output() string {
	select {
	case <-ch.done:
		return fmt.Sprintf("child %s output:\n%s", ch.role, ch.out.String())
	default:
		return fmt.Sprintf("child %s still running", ch.role)
	}
}

// wait waits for a successful exit.
func (ch *child) wait(limit time.Duration) error {
	select {
	case <-ch.done:
	case <-time.After(limit):
		ch.cmd.Process.Kill()
		<-ch.done
		return fmt.Errorf("child %s did not finish within %v\n%s", ch.role, limit, ch.output())
	}
	if ch.err != nil {
		return fmt.Errorf("child %s: %v\n%s", ch.role, ch.err, ch.output())
	}
	return nil
}

// acceptChild accepts a connection from ch, giving up if ch exits first.
func acceptChild(ctx context.Context, ln fabric.Listener, ch *child, fill func([]byte)) (fabric.Conn, *fabric.Region, fabric.Desc, error) {
	type res struct {
		c   fabric.Conn
		r   *fabric.Region
		d   fabric.Desc
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rc := make(chan res, 1)
	go func() {
		c, r, d, err := AcceptGrant(ctx, ln, xpSize, fill)
		rc <- res{c, r, d, err}
	}()
	select {
	case x := <-rc:
		return x.c, x.r, x.d, x.err
	case <-ch.done:
		// A child that connected may be done and gone before the accept
		// returns here (its side ends at the accept's arrival): give the
		// accept a moment before taking the exit for a failure to connect.
		var x res
		select {
		case x = <-rc:
		case <-time.After(time.Second):
			cancel()
			x = <-rc
		}
		if x.err == nil {
			return x.c, x.r, x.d, nil // connected, then exited: let the caller see
		}
		return nil, nil, fabric.Desc{}, fmt.Errorf("child exited before connecting: %v\n%s", ch.err, ch.output())
	}
}

// runChild plays role in a re-executed process.
func runChild(role, addr, desc string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*caseTimeout)
	defer cancel()
	switch role {
	case "rw":
		return childRW(ctx, addr)
	case "intruder":
		b, err := hex.DecodeString(desc)
		if err != nil {
			return err
		}
		d, err := fabric.ParseDesc(b)
		if err != nil {
			return err
		}
		return childIntruder(ctx, addr, d)
	case "victim":
		return childVictim(ctx, addr)
	}
	return fmt.Errorf("unknown role %q", role)
}

// childDial connects, granting a region of xpSize (filled by fill first).
func childDial(ctx context.Context, addr string, fill func([]byte)) (fabric.Conn, *fabric.Region, fabric.Desc, error) {
	s, err := fabric.Dial(ctx, addr, fabric.Options{})
	if err != nil {
		return nil, nil, fabric.Desc{}, err
	}
	c, r, err := Grant(ctx, s, xpSize, fill, nil)
	if err != nil {
		return nil, nil, fabric.Desc{}, err
	}
	d, err := fabric.ParseDesc(c.PeerData())
	if err != nil {
		c.Close()
		return nil, nil, fabric.Desc{}, err
	}
	return c, r, d, nil
}

func childRW(ctx context.Context, addr string) error {
	c, r, remote, err := childDial(ctx, addr, func(b []byte) { copy(b, pattern(seedChildR, xpBlock)) })
	if err != nil {
		return err
	}
	defer c.Close()
	m := r.Bytes()
	const in, out, back, mark = 2 * xpBlock, 4 * xpBlock, 6 * xpBlock, 8 * xpBlock
	if err := execOK(c, read(r, in, remote, 0, xpBlock, 1)); err != nil {
		return fmt.Errorf("READ: %w", err)
	}
	if err := equal("READ of the parent's region", m[in:in+xpBlock], pattern(seedParent, xpBlock)); err != nil {
		return err
	}
	copy(m[out:], pattern(seedChildW, xpBlock))
	if err := execOK(c,
		write(r, out, remote, xpBlock, xpBlock, 2),
		read(r, back, remote, xpBlock, xpBlock, 3)); err != nil {
		return fmt.Errorf("WRITE+READ: %w", err)
	}
	if err := equal("READ back", m[back:back+xpBlock], pattern(seedChildW, xpBlock)); err != nil {
		return err
	}
	copy(m[mark:], childOK)
	if err := execOK(c, write(r, mark, remote, xpMarkerOff, len(childOK), 4)); err != nil {
		return fmt.Errorf("WRITE marker: %w", err)
	}
	// Stay connected until the parent, done with our region, says so.
	var once sync.Once
	abort := make(chan struct{})
	go func() {
		select {
		case <-c.Done():
		case <-ctx.Done():
		}
		once.Do(func() { close(abort) })
	}()
	return eventuallyOr(m, xpMarkerOff, parentOK, abort)
}

func childIntruder(ctx context.Context, addr string, foreign fabric.Desc) error {
	for i, kind := range []fabric.OpKind{fabric.OpWrite, fabric.OpRead} {
		c, r, own, err := childDial(ctx, addr, nil)
		if err != nil {
			return err
		}
		defer c.Close()
		// Its own grant works...
		if err := execOK(c, read(r, 0, own, 0, 64, 1)); err != nil {
			return fmt.Errorf("conn %d, own grant: %w", i, err)
		}
		// ...the other process's does not.
		copy(r.Bytes(), pattern(seedIntrude, 2*xpBlock))
		op := fabric.Op{Kind: kind, ID: 2, Local: r, Len: 2 * xpBlock, Remote: foreign}
		cs, err := do(c, op)
		if err != nil {
			return err
		}
		if err := checkCompletions([]fabric.Op{op}, cs, fabric.ErrRemoteAccess); err != nil {
			return fmt.Errorf("conn %d, foreign %v: %w", i, kind, err)
		}
	}
	return nil
}

// childVictim WRITEs a growing counter to the parent's region until it is
// killed; finishing on its own is a failure.
func childVictim(ctx context.Context, addr string) error {
	c, r, remote, err := childDial(ctx, addr, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	for n := uint64(1); ctx.Err() == nil; n++ {
		binary.LittleEndian.PutUint64(r.Bytes(), n)
		if err := execOK(c, write(r, 0, remote, 0, 8, 2*n), read(r, 8, remote, 8, 8, 2*n+1)); err != nil {
			return err
		}
	}
	return errors.New("never killed")
}
