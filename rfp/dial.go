package rfp

import (
	"context"
	"fmt"

	"github.com/jakiro-kv/jakiro/fabric"
)

// DialConfig is the client's side of the handshake.
type DialConfig struct {
	// Slots asks the server for rings this deep (a window over its
	// default); 0 takes the server's.
	Slots  int
	Fabric fabric.Options
	// AuthToken is presented to the server; empty takes $JAKIRO_AUTH_TOKEN
	// (AuthTokenEnv), if set.
	AuthToken string
}

// Link is a client's established connection to a server: the fabric
// connection, the client's local region (the grant's geometry; its
// descriptor is in the grant's control block already, or on its way) and
// what the server granted. An Engine runs the protocol over it;
// Conn.Close ends it.
type Link struct {
	Conn    fabric.Conn
	Local   *fabric.Region
	Welcome Welcome
	// Control, where the fabric applies WRITEs in order, is the control
	// block's WRITE, not posted yet: the owner posts it ahead of its first
	// requests, in the same batch (one send on tcp; Engine.Queue), and it
	// lands before them. Its ID is a WRITE ID, which an Engine ignores.
	// Where WRITEs may land out of order Dial wrote the block itself, and
	// Control is nil.
	Control *fabric.Op
}

// Dial connects to a Jakiro server: handshake, local region, control block
// (written, or left to the owner: Link.Control).
func Dial(ctx context.Context, addr string, cfg DialConfig) (*Link, error) {
	// The one region a client allocates, after the handshake, is the
	// grant's size, which the server's domains hold: its domain can be one
	// the server made ahead (shm), and the join then makes no memory.
	cfg.Fabric.BorrowDomain = true
	setup, err := fabric.Dial(ctx, addr, cfg.Fabric)
	if err != nil {
		return nil, err
	}
	conn, err := setup.Establish(ctx, Hello{Version: Version, Slots: uint16(cfg.Slots)}.withAuth(cfg.authToken()).Put())
	if err != nil {
		setup.Close()
		return nil, err
	}
	w, err := ParseWelcome(conn.PeerData())
	if err != nil {
		conn.Close()
		return nil, err
	}
	local, err := conn.Alloc(w.Layout.Size())
	if err != nil {
		conn.Close()
		return nil, err
	}
	// The server finds reply-mode responses' destination here.
	n := PutControl(local.Bytes(), local.Desc())
	if fabric.WritesInOrder(conn) {
		// It lands before any request posted after it: no round trip
		// for it on the join's path, and no send of its own.
		op := &fabric.Op{Kind: fabric.OpWrite, ID: idWrite, Local: local, Remote: w.Grant, Len: n}
		return &Link{Conn: conn, Local: local, Welcome: w, Control: op}, nil
	}
	// Nothing else is outstanding yet, so a blocking WRITE will do.
	if err := fabric.Write(conn, local, 0, w.Grant, 0, n); err != nil {
		conn.Close()
		return nil, fmt.Errorf("rfp: writing control block: %w", err)
	}
	return &Link{Conn: conn, Local: local, Welcome: w}, nil
}
