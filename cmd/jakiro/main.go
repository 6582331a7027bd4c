// Command jakiro runs a Jakiro server and talks to one from a terminal.
//
//	jakiro server --listen shm:///tmp/jakiro.sock --partitions 2 --memory 1GiB
//	jakiro put --addr shm:///tmp/jakiro.sock KEY VALUE
//	jakiro get --addr shm:///tmp/jakiro.sock KEY        # exit 1 if not found
//	jakiro del KEY ; jakiro stats
//
// Every flag can also come from a JAKIRO_* environment variable.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/jakiro-kv/jakiro/client"
)

// exitNotFound is get's exit status for a missing key; other failures exit 2.
const (
	exitNotFound = 1
	exitError    = 2
)

func main() {
	app := &cli.App{
		Name:  "jakiro",
		Usage: "an RDMA-style key-value cache on the Remote Fetching Paradigm",
		Commands: []*cli.Command{
			serverCommand(),
			getCommand(),
			putCommand(),
			delCommand(),
			statsCommand(),
		},
		ExitErrHandler: func(*cli.Context, error) {},
	}
	if err := app.Run(os.Args); err != nil {
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
