package tcp

import "golang.org/x/sys/unix"

// A long READ is not copied into the send buffer: its response stages a
// reference to the region's bytes, which the socket takes straight from
// the region (sendmsg with an iovec) when it has room. A peer that asks
// for many long READs and does not take the answers so costs the target
// a few words per READ, not a copy of each (the ordering contract lets a
// READ return the bytes of any moment during the operation).
//
// refMin: READs shorter than this are copied (one iovec less, and the
// region need not stay referenced).
const refMin = 4 << 10

// maxIov bounds the iovecs of one sendmsg (the kernel's UIO_MAXIOV is
// 1024).
const maxIov = 64

// txRef is a READ's data staged by reference: it goes out after
// buf[:pos] and before buf[pos:].
type txRef struct {
	pos  int
	r    *region // referenced until sent or dropped
	off  uint64  // where data starts in r
	data []byte
}

// putRef stages data of r (referenced by the caller, handed over) as
// the payload that follows the bytes staged so far.
func (t *txState) putRef(r *region, off uint64, data []byte) {
	t.refs = append(t.refs, txRef{pos: len(t.buf), r: r, off: off, data: data})
	t.refBytes += len(data)
	t.queued += uint64(len(data))
}

// iovecs fills v with what is staged, in stream order, and returns it.
func (t *txState) iovecs(v [][]byte) [][]byte {
	v = v[:0]
	at := t.start
	i := t.refHead
	for ; i < len(t.refs) && len(v) < maxIov-1; i++ {
		ref := &t.refs[i]
		if ref.pos > at {
			v = append(v, t.buf[at:ref.pos])
			at = ref.pos
		}
		d := ref.data
		if i == t.refHead {
			d = d[t.refOff:]
		}
		v = append(v, d)
	}
	if i == len(t.refs) && at < len(t.buf) {
		v = append(v, t.buf[at:])
	}
	return v
}

// consume accounts for n bytes sent, in stream order, and lets go of the
// references that are all out.
func (t *txState) consume(n int) {
	for n > 0 {
		if t.refHead < len(t.refs) && t.start == t.refs[t.refHead].pos {
			ref := &t.refs[t.refHead]
			k := min(n, len(ref.data)-t.refOff)
			t.refOff += k
			t.refBytes -= k
			n -= k
			if t.refOff == len(ref.data) {
				if ref.r != nil {
					ref.r.release()
				}
				*ref = txRef{}
				t.refHead++
				t.refOff = 0
			}
			continue
		}
		lim := len(t.buf)
		if t.refHead < len(t.refs) {
			lim = t.refs[t.refHead].pos
		}
		k := min(n, lim-t.start)
		if k == 0 {
			return // more than was staged: cannot happen
		}
		t.start += k
		n -= k
	}
	if t.refHead == len(t.refs) {
		t.refs, t.refHead = t.refs[:0], 0
	}
}

// slide moves the unsent bytes of buf to its front, so the buffer does
// not creep.
func (t *txState) slide() {
	k := copy(t.buf, t.buf[t.start:])
	for i := t.refHead; i < len(t.refs); i++ {
		t.refs[i].pos -= t.start
	}
	t.buf, t.start = t.buf[:k], 0
	if t.refHead > 64 && t.refHead > len(t.refs)/2 {
		k := copy(t.refs, t.refs[t.refHead:])
		clear(t.refs[k:])
		t.refs, t.refHead = t.refs[:k], 0
	}
}

// dropRefs lets go of every staged reference: the connection is closed.
func (t *txState) dropRefs() {
	for i := t.refHead; i < len(t.refs); i++ {
		if r := t.refs[i].r; r != nil {
			r.release()
		}
	}
	clear(t.refs)
	t.refs, t.refHead, t.refOff, t.refBytes = nil, 0, 0, 0
}

// unshare copies the staged, unsent data of refs into r's range
// [off, off+n) before a WRITE of the peer lands there: a READ the peer
// posted before the WRITE must not return the WRITE's bytes.
func (t *txState) unshare(r *region, off, n uint64) {
	for i := t.refHead; i < len(t.refs); i++ {
		ref := &t.refs[i]
		if ref.r != r || off >= ref.off+uint64(len(ref.data)) || ref.off >= off+n {
			continue
		}
		// A private copy: the region need not stay referenced. The
		// part already sent is not copied, but ref.off and the slice
		// keep their offsets so the accounting stays as it was.
		d := make([]byte, len(ref.data))
		from := 0
		if i == t.refHead {
			from = t.refOff
		}
		copy(d[from:], ref.data[from:])
		ref.data = d
		ref.r.release()
		ref.r = nil
	}
}

// sendStaged sends what the socket takes of the staged bytes.
func (t *txState) sendStaged(fd int) (int, error) {
	if t.refHead == len(t.refs) {
		n, err := sendSome(fd, t.buf[t.start:])
		t.consume(n)
		return n, err
	}
	sent := 0
	var iov [maxIov][]byte
	for !t.empty() {
		v := t.iovecs(iov[:0])
		n, err := unix.SendmsgBuffers(fd, v, nil, nil, unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT)
		if n > 0 {
			sent += n
			t.consume(n)
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return sent, nil
		case err != nil:
			return sent, err
		}
	}
	return sent, nil
}
