package fabric

import (
	"errors"
	"fmt"
)

// ErrNoProvider is the error (wrapped) for a URL whose scheme no linked
// provider serves.
var ErrNoProvider = errors.New("no fabric provider")

// providersImport is the package that links the built-in providers.
const providersImport = "github.com/jakiro-kv/jakiro/fabric/providers"

// NoProviderError says that no linked provider serves scheme, and which
// import (or build) fixes that, as database/sql's "forgotten import?".
func NoProviderError(scheme string) error {
	var fix string
	switch scheme {
	case "shm", "tcp":
		fix = fmt.Sprintf("forgotten import? add `import _ %q` to the program", providersImport)
	case "rdma":
		fix = fmt.Sprintf("rdma:// needs a build with -tags rdma (make build-rdma) and `import _ %q`", providersImport)
	default:
		fix = "known schemes: shm, tcp, rdma"
	}
	return fmt.Errorf("%w for %q (linked: %v): %s", ErrNoProvider, scheme, Schemes(), fix)
}
