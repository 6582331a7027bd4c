// Command jakiro runs a Jakiro server and talks to one from a terminal.
//
//	jakiro server --listen shm:///tmp/jakiro.sock --partitions 2 --memory 1GiB
//	jakiro put KEY VALUE --ttl 60     # flags go before or after the arguments
//	jakiro get KEY                    # exit 1 if not found, 2 on other errors
//	jakiro del KEY
//	jakiro add|replace|append|prepend|cas|gets|incr|decr|touch|gat|flush ...
//	                                  # exit 3 not stored, 4 exists, 5 not a number
//	jakiro stats                      # a table; --json for scripts
//	jakiro --version
//
// Every flag can also come from a JAKIRO_* environment variable. Errors a
// newcomer meets (no server, a stale socket, a fabric not compiled in)
// name the fix.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/cmd/internal/version"
	_ "github.com/jakiro-kv/jakiro/fabric/providers" // shm://, tcp://, and rdma:// with -tags rdma
)

// exitNotFound is get's and del's exit status for a missing key; other
// failures, usage errors included, exit 2.
const (
	exitNotFound = 1
	exitError    = 2
)

// defaultAddr is where the server listens and clients dial unless told.
const defaultAddr = "shm:///tmp/jakiro.sock"

func main() {
	app := newApp()
	if err := app.Run(flagsFirst(app, os.Args)); err != nil {
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			if msg := err.Error(); msg != "" {
				fmt.Fprintln(os.Stderr, msg)
			}
			os.Exit(ec.ExitCode())
		}
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, client.ErrNotFound) {
			os.Exit(exitNotFound)
		}
		os.Exit(exitError)
	}
}

func newApp() *cli.App {
	cmds := []*cli.Command{
		serverCommand(),
		getCommand(),
		putCommand(),
		delCommand(),
		statsCommand(),
	}
	cmds = append(cmds, commandCommands()...)
	for _, c := range cmds {
		c.OnUsageError = usageError
		c.HideHelpCommand = true
	}
	app := &cli.App{
		Name:            "jakiro",
		Usage:           "an RDMA-style key-value cache on the Remote Fetching Paradigm",
		Commands:        cmds,
		OnUsageError:    usageError,
		CommandNotFound: commandNotFound,
		ExitErrHandler:  func(*cli.Context, error) {},
	}
	version.SetFlag(app)
	return app
}
