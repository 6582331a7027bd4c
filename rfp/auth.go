package rfp

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
)

// Authentication is checked once, here, for every fabric: a client's
// Hello carries a proof of the shared token (its SHA-256, domain
// separated), the server's Listener compares it in constant time and
// answers a client without the right one with a refusal Welcome, which
// the client reports as ErrAuth. The proof is as good as the token
// against anyone who can read the traffic: on untrusted networks, carry
// the fabric over an encrypted link.

// AuthTokenEnv is where clients (rfp.Dial) and the server's command line
// take the shared token from when none is given explicitly.
const AuthTokenEnv = "JAKIRO_AUTH_TOKEN"

// ErrAuth: the server wants a token this client did not give, or gave
// wrong.
var ErrAuth = errors.New("authentication failed: set JAKIRO_AUTH_TOKEN or --auth-token")

// AuthProofSize is the size of the token proof a Hello carries.
const AuthProofSize = sha256.Size

// AuthProof is what a Hello carries for token: it never holds the token
// itself.
func AuthProof(token string) [AuthProofSize]byte {
	return sha256.Sum256([]byte("jakiro-auth-v1\x00" + token))
}

// authToken is the token a client sends: its config's, else the
// environment's.
func (c DialConfig) authToken() string {
	if c.AuthToken != "" {
		return c.AuthToken
	}
	return os.Getenv(AuthTokenEnv)
}

// withAuth adds the proof of token (none if empty) to h.
func (h Hello) withAuth(token string) Hello {
	if token != "" {
		h.Proof, h.HasProof = AuthProof(token), true
	}
	return h
}

// authCheck is a listener's side: nil wants nothing.
type authCheck struct{ want *[AuthProofSize]byte }

func newAuthCheck(token string) authCheck {
	if token == "" {
		return authCheck{}
	}
	p := AuthProof(token)
	return authCheck{&p}
}

func (a authCheck) check(h Hello) error {
	if a.want == nil {
		return nil
	}
	if !h.HasProof {
		return fmt.Errorf("%w (the client sent no token)", ErrAuth)
	}
	if subtle.ConstantTimeCompare(h.Proof[:], a.want[:]) != 1 {
		return fmt.Errorf("%w (the client's token is wrong)", ErrAuth)
	}
	return nil
}

// CheckListen is protected mode, as Redis has it: a server must not be
// reachable from other hosts without a token unless told so (insecure).
// Listening on a network fabric (tcp, rdma) needs an explicit host: an
// empty one would silently mean every interface. Local fabrics (shm) rely
// on file permissions.
func CheckListen(addr string, hasToken, insecure bool) error {
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "tcp" && u.Scheme != "rdma") {
		return nil // not a network fabric; Listen reports bad addresses
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return fmt.Errorf("%s names no host, which would listen on every interface: use %s://127.0.0.1:%s for this machine only, or name the address to serve on (%s://0.0.0.0:%s for all, with an auth token)",
			addr, u.Scheme, port, u.Scheme, port)
	}
	if loopback(host) || hasToken || insecure {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s without authentication (protected mode): anyone who can reach it could read and change every key. "+
		"Set --auth-token, --auth-token-file or %s (clients then need %s), listen on 127.0.0.1 for this machine only, or pass --insecure if every host that can reach it is trusted",
		addr, AuthTokenEnv, AuthTokenEnv)
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
