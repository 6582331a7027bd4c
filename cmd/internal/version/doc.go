// Package version says what a Jakiro binary was built from, for bug
// reports: the module version, the commit (and whether the tree had
// uncommitted changes), the Go toolchain and the fabrics compiled in.
//
// The commit comes from the build info Go stamps (vcs.revision,
// vcs.modified). Go does not stamp linked git worktrees or builds with
// -buildvcs=false, so the Makefile also passes the commit with
//
//	-ldflags "-X github.com/jakiro-kv/jakiro/cmd/internal/version.commit=SHA[+dirty]"
//
// which is used when the build info has none.
package version
