package fabricbench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// Serve accepts connections on ln until it is closed. Each connection is
// granted one region of regionSize bytes, whose Desc is the accept private
// data, and is held until the peer goes. Serve returns nil once ln is
// closed.
func Serve(ln fabric.Listener, regionSize int) error {
	if regionSize <= 0 {
		return fmt.Errorf("fabricbench: region size %d", regionSize)
	}
	for {
		s, err := ln.Accept(context.Background())
		if errors.Is(err, fabric.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		go grant(s, regionSize)
	}
}

func grant(s fabric.Setup, size int) {
	r, err := s.Alloc(size)
	if err != nil {
		s.Close() // reject: the dialer sees why it got nothing
		return
	}
	var b [fabric.DescSize]byte
	r.Desc().Put(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c, err := s.Establish(ctx, b[:])
	cancel()
	if err != nil {
		s.Close()
		return
	}
	<-c.Done()
	c.Close()
}
