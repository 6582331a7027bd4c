package shm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/internal/fdhint"
)

// Handshake messages, one SOCK_SEQPACKET datagram each:
//
//	magic u32 | version u8 | type u8 | dataLen u16 | data
//
// hello (dialer) and accept (acceptor) carry the sender's domain memfd as
// SCM_RIGHTS; reject carries nothing. A dialer that borrows its domain
// (fabric.Options.BorrowDomain) sends helloBorrow, without an fd, and is
// answered acceptLent, which carries the acceptor's domain memfd, then
// the one it made for the dialer, then the bells. After accept the
// socket carries no more messages: it stays open only so each side sees
// the other go (EOF).
const (
	wireMagic   = 0x48534b4a // "JKSH"
	wireVersion = 2
	wireHdr     = 8

	msgHello       = 1
	msgAccept      = 2
	msgReject      = 3
	msgHelloBorrow = 4
	msgAcceptLent  = 5

	// An accept's data starts with the dialer's ring source (int32, -1:
	// none; eventbell.Set.AllocSource), then the private data.
	sourceBytes = 4

	maxMsg = wireHdr + sourceBytes + fabric.MaxAcceptData

	// scmMaxFD is the most fds Linux passes in one SCM_RIGHTS message
	// (SCM_MAX_FD); accept carries the domain memfd (acceptLent: two),
	// then the bells (two page memfds and an eventfd per bell), so a
	// listener offers at most maxBells.
	scmMaxFD = 253
	maxBells = scmMaxFD - 4
)

type message struct {
	typ   byte
	data  []byte
	fd    int   // -1 if none
	lent  int   // acceptLent: the dialer's domain memfd; else -1
	bells []int // accept: the acceptor's doorbells (eventbell.Set.Share)
}

// close closes every fd m carries.
func (m *message) close() {
	if m.fd >= 0 {
		unix.Close(m.fd)
		m.fd = -1
	}
	if m.lent >= 0 {
		unix.Close(m.lent)
		m.lent = -1
	}
	closeFDs(m.bells)
	m.bells = nil
}

// none is a message that carries nothing.
func none() message { return message{fd: -1, lent: -1} }

// sendMsg sends one message; fd (if >= 0) and then bells (acceptLent:
// the dialer's domain first) travel as SCM_RIGHTS.
func sendMsg(c *net.UnixConn, typ byte, data []byte, fd int, bells ...int) error {
	var b [maxMsg]byte
	msg, oob := encodeMsg(&b, typ, data, fd, bells...)
	_, _, err := c.WriteMsgUnix(msg, oob, nil)
	return err
}

func encodeMsg(b *[maxMsg]byte, typ byte, data []byte, fd int, bells ...int) (msg, oob []byte) {
	binary.LittleEndian.PutUint32(b[0:], wireMagic)
	b[4] = wireVersion
	b[5] = typ
	binary.LittleEndian.PutUint16(b[6:], uint16(len(data)))
	n := wireHdr + copy(b[wireHdr:], data)
	if fd >= 0 {
		oob = unix.UnixRights(append([]int{fd}, bells...)...)
	}
	return b[:n], oob
}

// sendMsgFD is sendMsg on a dialer's socket (dialSock): its first
// message, which the empty socket buffer takes at once.
func sendMsgFD(s int, typ byte, data []byte, fd int) error {
	var b [maxMsg]byte
	msg, oob := encodeMsg(&b, typ, data, fd)
	for {
		err := unix.Sendmsg(s, msg, oob, nil, 0)
		if err != unix.EINTR {
			return err
		}
	}
}

var errProtocol = errors.New("shm: handshake protocol error")

// recvMsg reads one handshake message. Every fd received is either
// returned (exactly one, on hello/accept) or closed.
func recvMsg(c *net.UnixConn) (message, error) {
	b, oob := recvBufs()
	n, oobn, flags, _, err := c.ReadMsgUnix(b, oob)
	if err != nil {
		return none(), err
	}
	return decodeMsg(b[:n], oob[:oobn], flags)
}

// recvMsgFD reads one handshake message on a dialer's socket (dialSock):
// it polls for up to spin, then waits in the runtime's poller until ctx
// ends.
func recvMsgFD(ctx context.Context, s int, spin time.Duration) (message, error) {
	b, oob := recvBufs()
	end := time.Now().Add(spin)
	for {
		m, again, err := tryRecvMsg(s, b, oob)
		if !again {
			return m, err
		}
		if err := ctx.Err(); err != nil {
			return none(), err
		}
		if time.Now().Before(end) {
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			continue
		}
		if err := waitReadable(ctx, s); err != nil {
			return none(), err
		}
	}
}

// tryRecvMsg reads one message if there is one (again: there is not).
func tryRecvMsg(s int, b, oob []byte) (m message, again bool, err error) {
	for {
		n, oobn, flags, _, err := unix.Recvmsg(s, b, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
		switch {
		case err == nil && n == 0 && oobn == 0:
			return none(), false, io.EOF
		case err == nil:
			m, err := decodeMsg(b[:n], oob[:oobn], flags)
			return m, false, err
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return none(), true, nil
		}
		return none(), false, err
	}
}

// waitReadable waits until s is readable (or has ended) or ctx ends, with
// the goroutine parked in the runtime's poller, through a non-blocking
// duplicate of s registered only for this wait: s itself stays a blocking
// descriptor outside the poller, and the message is read after the
// duplicate is closed, so it needs no room beyond what it did. A thread
// blocked in a system call instead (ppoll) keeps the runtime's sysmon
// waking to take its P back: harmless for one process, but a burst of
// dialers waiting so on a busy listener took the cores it needed to
// answer them (256 processes on 2 vCPUs: the listener's threads runnable
// and not run for seconds, each dialer 4-7 ms of CPU instead of 1.4).
// Without a descriptor to spare it waits one slice in ppoll.
func waitReadable(ctx context.Context, s int) error {
	d, err := unix.FcntlInt(uintptr(s), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return ppollSlice(ctx, s)
	}
	// The flag belongs to the file description s shares: s is blocking
	// again once the duplicate has left the poller (Close).
	if err := unix.SetNonblock(d, true); err != nil {
		unix.Close(d)
		return ppollSlice(ctx, s)
	}
	f := os.NewFile(uintptr(d), "shm-dial")
	defer unix.SetNonblock(s, false)
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	// The context ends the wait (its Err is set by then): a deadline of
	// the file's own could end it first, with a timeout for ctx's error.
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	pfd := []unix.PollFd{{Fd: int32(s), Events: unix.POLLIN}}
	err = rc.Read(func(uintptr) bool {
		n, err := unix.Poll(pfd, 0)
		return n > 0 || err != nil && err != unix.EINTR
	})
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

// ppollSlice waits in ppoll until s is readable, for at most recvSlice
// (a context canceled without a deadline is seen within it).
func ppollSlice(ctx context.Context, s int) error {
	wait := recvSlice
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, max(time.Until(dl), time.Microsecond))
	}
	ts := unix.NsecToTimespec(int64(wait))
	pfd := []unix.PollFd{{Fd: int32(s), Events: unix.POLLIN}}
	if _, err := unix.Ppoll(pfd, &ts, nil); err != nil && err != unix.EINTR {
		return err
	}
	return nil
}

// recvSlice bounds one ppoll of ppollSlice.
const recvSlice = 10 * time.Millisecond

// recvBufs are a message's buffers: room to see (and close) extra fds.
func recvBufs() (b []byte, oob []byte) {
	return make([]byte, maxMsg+1), make([]byte, unix.CmsgSpace(4*(fabric.MaxDoorbells+4)))
}

// decodeMsg checks a received message; every fd in oob is either
// returned (exactly one, on hello/accept) or closed.
func decodeMsg(b, oob []byte, flags int) (message, error) {
	n := len(b)
	fds, ferr := parseFDs(oob)
	m := none()
	fail := func(format string, a ...any) (message, error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return none(), fmt.Errorf("%w: "+format, append([]any{errProtocol}, a...)...)
	}
	switch {
	case ferr != nil:
		return fail("control message: %v", ferr)
	case flags&unix.MSG_CTRUNC != 0 && fdhint.AtLimit() != nil:
		// The kernel dropped the fds: this process is out of them.
		for _, fd := range fds {
			unix.Close(fd)
		}
		return none(), fmt.Errorf("shm: handshake: receiving the peer's descriptors: %w", fdhint.AtLimit())
	case flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
		return fail("truncated message (flags %#x)", flags)
	case n < wireHdr:
		return fail("short message of %d bytes", n)
	case binary.LittleEndian.Uint32(b[0:]) != wireMagic || b[4] != wireVersion:
		return fail("bad magic or version")
	}
	m.typ = b[5]
	dl := int(binary.LittleEndian.Uint16(b[6:]))
	if dl != n-wireHdr {
		return fail("data length %d, message carries %d", dl, n-wireHdr)
	}
	// domains: the memfds the message must carry; bells: whether
	// doorbells may follow them (none, or two pages and an eventfd each).
	limit, domains, bells := 0, 0, false
	switch m.typ {
	case msgHello:
		limit, domains = fabric.MaxDialData, 1
	case msgHelloBorrow:
		limit = fabric.MaxDialData
	case msgAccept:
		limit, domains, bells = sourceBytes+fabric.MaxAcceptData, 1, true
	case msgAcceptLent:
		limit, domains, bells = sourceBytes+fabric.MaxAcceptData, 2, true
	case msgReject:
	default:
		return fail("unknown message type %d", m.typ)
	}
	if dl > limit {
		return fail("%d bytes of private data, limit %d", dl, limit)
	}
	nb := len(fds) - domains
	if nb < 0 || nb > 0 && (!bells || nb < 3 || nb > 2+fabric.MaxDoorbells) {
		return fail("message type %d with %d fds", m.typ, len(fds))
	}
	// Bell fds are checked where they are opened (eventbell.Open: the
	// pages must be sealed memfds, the bells eventfds), once: each check
	// of an eventfd is a readlink in /proc.
	m.data = append([]byte(nil), b[wireHdr:n]...)
	if domains > 0 {
		m.fd = fds[0] // close-on-exec already: both reads ask MSG_CMSG_CLOEXEC
	}
	if domains > 1 {
		m.lent = fds[1]
	}
	if bells {
		m.bells = fds[domains:]
	}
	return m, nil
}

func parseFDs(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for i := range msgs {
		if msgs[i].Header.Level != unix.SOL_SOCKET || msgs[i].Header.Type != unix.SCM_RIGHTS {
			continue
		}
		f, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return nil, err
		}
		fds = append(fds, f...)
	}
	return fds, nil
}

// MaxDialerDomain bounds the domain (Options.DomainSize, default 1 GiB) a
// dialer may offer. An acceptor maps no more of it than its own
// DomainSize (see mapPeer's window), so this only refuses dialers that
// ask for nonsense.
const MaxDialerDomain = 1 << 30

// mapPeer verifies a received domain memfd of at most limit region bytes
// and maps its table and at most window bytes of its region area: a
// region the peer registers beyond them is refused at lookup
// (errOutsideMapping), so a window sized to what this side will address
// costs it no more address space than that, whatever the peer's domain.
// It always closes fd: the mapping keeps the file alive.
func mapPeer(fd int, limit, window int64) ([]byte, error) {
	mem, _, err := mapDomainFD(fd, limit, window)
	return mem, err
}

// mapDomainFD is mapPeer, which also returns the memfd's inode.
func mapDomainFD(fd int, limit, window int64) ([]byte, uint64, error) {
	defer unix.Close(fd)
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: peer fd is not a sealable memfd: %v", errProtocol, err)
	}
	if seals&requiredSeals != requiredSeals {
		return nil, 0, fmt.Errorf("%w: peer memfd seals %#x lack %#x (it could shrink under us)", errProtocol, seals, requiredSeals)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, 0, fmt.Errorf("shm: fstat peer memfd: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, 0, fmt.Errorf("%w: peer fd is not a regular file (mode %#o)", errProtocol, st.Mode)
	}
	if st.Size < tableSize || st.Size > tableSize+limit {
		return nil, 0, fmt.Errorf("%w: peer domain of %d bytes, at most %d", errProtocol, st.Size, tableSize+limit)
	}
	// The seals keep the file at least this long, so every mapped page
	// stays backed (no SIGBUS).
	n := min(st.Size, tableSize+max(window, 0))
	mem, err := unix.Mmap(fd, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, 0, fmt.Errorf("shm: mmap peer domain: %w", err)
	}
	if err := checkHeader(mem); err != nil {
		unix.Munmap(mem)
		return nil, 0, fmt.Errorf("%w: %v", errProtocol, err)
	}
	return mem, st.Ino, nil
}
