package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// fixError is an error a newcomer meets, said with its fix. It wraps the
// cause, so errors.Is still sees it.
type fixError struct {
	what, fix string
	cause     error
}

func (e *fixError) Error() string { return "jakiro: " + e.what + "\n" + e.fix }
func (e *fixError) Unwrap() error { return e.cause }

// checkAddr rejects, before any dial or listen, an address this binary
// cannot use: no scheme, or a fabric not compiled in.
func checkAddr(addr string) error {
	u, err := url.Parse(addr)
	if err != nil || u.Scheme == "" {
		fix := "want shm:///path/to.sock, tcp://host:port or rdma://ip:port"
		switch _, _, herr := net.SplitHostPort(addr); {
		case strings.HasPrefix(addr, "/"):
			fix = "did you mean shm://" + addr + "?"
		case herr == nil:
			fix = "did you mean tcp://" + addr + "?"
		}
		return &fixError{what: fmt.Sprintf("address %q has no fabric scheme", addr), fix: fix, cause: err}
	}
	have := fabric.Schemes()
	if slices.Contains(have, u.Scheme) {
		return nil
	}
	compiled := make([]string, len(have))
	for i, s := range have {
		compiled[i] = s + "://"
	}
	if u.Scheme == "rdma" {
		return &fixError{what: fmt.Sprintf("rdma:// is not compiled into this binary (it has %s)", strings.Join(compiled, ", ")),
			fix: "`make build-rdma` builds bin/jakiro with the verbs provider (it installs rdma-core headers)"}
	}
	return &fixError{what: fmt.Sprintf("unknown fabric %q in %q", u.Scheme+"://", addr),
		fix: "this binary has " + strings.Join(compiled, ", ") + "; rdma:// needs `make build-rdma`"}
}

// shmPath is the socket file of an shm:// address, "" for other fabrics.
func shmPath(addr string) string {
	u, err := url.Parse(addr)
	if err != nil || u.Scheme != "shm" {
		return ""
	}
	if u.Opaque != "" {
		return u.Opaque // shm:relative/path
	}
	return u.Path
}

// explainDial says why a client could not reach addr, and what to do.
func explainDial(addr string, timeout time.Duration, err error) error {
	start := "is `jakiro server` running? it listens on " + defaultAddr + " by default"
	if addr != defaultAddr {
		start = fmt.Sprintf("is `jakiro server --listen %s` running? (the server listens on %s by default)", addr, defaultAddr)
	}
	path := shmPath(addr)
	switch {
	case path != "" && errors.Is(err, syscall.ENOENT):
		return &fixError{what: fmt.Sprintf("no server at %s: %s does not exist", addr, path), fix: start, cause: err}
	case path != "" && errors.Is(err, syscall.ECONNREFUSED):
		return &fixError{what: fmt.Sprintf("no server listens on %s: the socket file is left over from a server that stopped", path),
			fix: fmt.Sprintf("start one with `jakiro server --listen %s` (it removes the stale file)", addr), cause: err}
	case path != "" && errors.Is(err, syscall.EACCES):
		return &fixError{what: fmt.Sprintf("permission denied on %s", path),
			fix: "the server's socket mode shuts this user out: run as the server's user, or start the server with --listen 'shm://" + path + "?mode=0666'", cause: err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &fixError{what: fmt.Sprintf("no server at %s (connection refused)", addr), fix: start, cause: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &fixError{what: fmt.Sprintf("no answer from %s within %s", addr, timeout),
			fix: "is the server up and reachable? --timeout waits longer", cause: err}
	}
	return err
}

// explainListen says why a server could not listen on addr, and what to do.
func explainListen(addr string, err error) error {
	path := shmPath(addr)
	switch {
	case path != "" && errors.Is(err, syscall.EADDRINUSE):
		if fi, serr := os.Lstat(path); serr == nil && fi.Mode()&os.ModeSocket == 0 {
			return &fixError{what: fmt.Sprintf("%s exists and is not a socket", path),
				fix: "remove it, or --listen another path", cause: err}
		}
		return &fixError{what: fmt.Sprintf("another server listens on %s", path),
			fix: "stop it first, or --listen another path (clients then need --addr)", cause: err}
	case errors.Is(err, syscall.EADDRINUSE):
		return &fixError{what: fmt.Sprintf("%s is in use: another server (or program) listens there", addr),
			fix: "stop it first, or --listen another port", cause: err}
	case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EROFS):
		var errno syscall.Errno
		errors.As(err, &errno)
		return &fixError{what: fmt.Sprintf("cannot listen on %s: %v", addr, errno),
			fix: "--listen an address this user may bind (for shm://, a path in a directory it can write)", cause: err}
	case path != "" && errors.Is(err, syscall.ENOENT):
		return &fixError{what: fmt.Sprintf("cannot create %s: its directory does not exist", path),
			fix: "create the directory, or --listen another path", cause: err}
	}
	return err
}

// staleSocket is the socket file at an shm:// address that nobody
// listens on (a server that died), "" if none. The shm listener removes
// such a file itself; the server says so.
func staleSocket(addr string) string {
	path := shmPath(addr)
	if path == "" {
		return ""
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSocket == 0 {
		return ""
	}
	c, err := net.DialTimeout("unixpacket", path, time.Second)
	if err == nil {
		c.Close()
		return ""
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return ""
	}
	return path
}
