package client

import "context"

// Many goroutines on one connection: one of them, the driver, steps the
// engine (submits what is queued, posts, polls, delivers); the others
// sleep until the driver hands them their result, or hands them the
// driving when its own operation is done. Without this every caller spins
// on the connection in turn, and with more callers than cores each result
// waits for its caller's turn at the spin gate (a 1,024-goroutine program
// sharing a few connections got most of its time from hand-offs).
//
// A caller that finds no free slot in its partition queues its request;
// whoever drives submits it as slots free up, in order. The caller's key
// and value stay valid because it waits until its call is done.

// enqueueLocked queues cl's request for the driver to submit.
func (c *conn) enqueueLocked(cl *call) {
	cl.queued = true
	c.queue = append(c.queue, cl)
}

// submitQueuedLocked submits queued requests whose partitions have a
// free slot, oldest first (so each partition keeps its callers' order).
func (c *conn) submitQueuedLocked() {
	if len(c.queue) == 0 {
		return
	}
	now := c.now()
	kept := c.queue[:0]
	for _, cl := range c.queue {
		if !c.eng.Free(cl.p) {
			kept = append(kept, cl)
			continue
		}
		cl.queued = false
		slot, err := c.eng.Submit(now, cl.p, cl.op, cl.key, cl.value, cl.ttl)
		if err != nil {
			c.finishLocked(cl, err)
			continue
		}
		c.slotCall[slot] = cl
	}
	clear(c.queue[len(kept):])
	c.queue = kept
}

// unqueueLocked removes cl from the queue (it gave up before submission).
func (c *conn) unqueueLocked(cl *call) {
	for i, x := range c.queue {
		if x == cl {
			copy(c.queue[i:], c.queue[i+1:])
			c.queue[len(c.queue)-1] = nil
			c.queue = c.queue[:len(c.queue)-1]
			break
		}
	}
	cl.queued = false
}

// finishLocked ends cl with err (nil: its result is in st and val) and
// wakes its caller if it sleeps.
func (c *conn) finishLocked(cl *call, err error) {
	cl.done, cl.err = true, err
	if cl.asleep {
		c.wakeLocked(cl)
	}
}

// sleepLocked parks cl's caller until its call is done or it is handed
// the driving (or ctx ends). Called with c.mu held; returns with it held.
func (c *conn) sleepLocked(ctx context.Context, cl *call) error {
	if cl.wake == nil {
		cl.wake = make(chan struct{}, 1)
	}
	cl.asleep = true
	cl.prev, cl.next = c.sleepTail, nil
	if c.sleepTail != nil {
		c.sleepTail.next = cl
	} else {
		c.sleepHead = cl
	}
	c.sleepTail = cl
	c.mu.Unlock()
	var err error
	select {
	case <-cl.wake:
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.mu.Lock()
	if err != nil {
		if cl.asleep {
			c.unlinkLocked(cl)
		} else {
			<-cl.wake // woken as ctx ended: take the token, the driving is passed on below
		}
	}
	return err
}

// wakeLocked wakes a sleeping caller.
func (c *conn) wakeLocked(cl *call) {
	c.unlinkLocked(cl)
	cl.wake <- struct{}{} // cap 1, and only a sleeper is woken: never blocks
}

func (c *conn) unlinkLocked(cl *call) {
	if cl.prev != nil {
		cl.prev.next = cl.next
	} else {
		c.sleepHead = cl.next
	}
	if cl.next != nil {
		cl.next.prev = cl.prev
	} else {
		c.sleepTail = cl.prev
	}
	cl.prev, cl.next, cl.asleep = nil, nil, false
}

// resignLocked ends cl's driving, if it drives, and hands the driving to
// the longest sleeper (sleepers are never done: delivery wakes them).
func (c *conn) resignLocked(cl *call) {
	if c.driver != cl {
		return
	}
	c.driver = nil
	if s := c.sleepHead; s != nil {
		c.wakeLocked(s)
	}
}

// wakeAllLocked wakes every sleeper (the connection closed).
func (c *conn) wakeAllLocked() {
	for c.sleepHead != nil {
		c.wakeLocked(c.sleepHead)
	}
}

// awaitLocked waits until cl is done, driving the connection when nobody
// else does. On an error the call is abandoned: its request, queued or
// in flight, no longer reaches it.
func (c *conn) awaitLocked(ctx context.Context, cl *call) error {
	var w waitState
	defer w.done()
	for !cl.done {
		if c.driver != nil && c.driver != cl {
			w.done() // a sleeper holds no place to spin
			if err := c.sleepLocked(ctx, cl); err != nil {
				return c.abandonLocked(cl, err)
			}
			continue
		}
		c.driver = cl
		if err := c.progressLocked(); err != nil {
			return c.abandonLocked(cl, err)
		}
		if cl.done {
			break
		}
		if err := c.wait(ctx, &w); err != nil {
			return c.abandonLocked(cl, err)
		}
	}
	c.resignLocked(cl)
	return cl.err
}

// abandonLocked detaches cl after an error and passes the driving on.
func (c *conn) abandonLocked(cl *call, err error) error {
	if cl.done { // finished meanwhile: the result stands
		c.resignLocked(cl)
		return cl.err
	}
	if cl.queued {
		c.unqueueLocked(cl)
	} else {
		c.forget(cl)
	}
	if c.driver == cl || c.driver == nil {
		c.driver = cl
		c.resignLocked(cl)
	}
	return err
}
