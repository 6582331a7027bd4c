package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/rfp"
)

func clientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "addr", Value: "shm:///tmp/jakiro.sock", Usage: "server URL", EnvVars: []string{"JAKIRO_ADDR"}},
		&cli.StringFlag{Name: "mode", Value: "rfp", Usage: "rfp, reply or hybrid", EnvVars: []string{"JAKIRO_MODE"}},
		&cli.StringFlag{Name: "rfs", Value: "auto", Usage: "remote fetch size (bytes, sizes like 1KiB, or auto)", EnvVars: []string{"JAKIRO_RFS"}},
		&cli.DurationFlag{Name: "timeout", Value: 5 * time.Second, Usage: "give up after this long", EnvVars: []string{"JAKIRO_TIMEOUT"}},
		&cli.StringFlag{Name: "rdma-dev", Usage: "RDMA device (rdma:// only)", EnvVars: []string{"JAKIRO_RDMA_DEV"}},
	}
}

// dial builds a client from the common flags. The caller must call the
// returned cancel and Close.
func dial(c *cli.Context) (*client.Client, context.Context, context.CancelFunc, error) {
	mode, err := rfp.ParseMode(c.String("mode"))
	if err != nil {
		return nil, nil, nil, cli.Exit(err, exitError)
	}
	rfs := 0
	if s := c.String("rfs"); s != "auto" {
		n, err := size(c, "rfs")
		if err != nil {
			return nil, nil, nil, cli.Exit(err, exitError)
		}
		rfs = int(n)
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	cl, err := client.Dial(ctx, c.String("addr"), client.WithMode(mode), client.WithRFS(rfs))
	if err != nil {
		cancel()
		return nil, nil, nil, cli.Exit(err, exitError)
	}
	return cl, ctx, cancel, nil
}

func opErr(err error) error {
	if errors.Is(err, client.ErrNotFound) {
		return cli.Exit(err, exitNotFound)
	}
	return cli.Exit(err, exitError)
}

func getCommand() *cli.Command {
	return &cli.Command{
		Name: "get", Usage: "print a key's value (exit 1 if not found)", ArgsUsage: "KEY",
		Flags: clientFlags(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cli.Exit("usage: jakiro get KEY", exitError)
			}
			cl, ctx, cancel, err := dial(c)
			if err != nil {
				return err
			}
			defer cancel()
			defer cl.Close()
			v, err := cl.Get(ctx, []byte(c.Args().First()))
			if err != nil {
				return opErr(err)
			}
			os.Stdout.Write(v)
			if len(v) == 0 || v[len(v)-1] != '\n' {
				fmt.Println()
			}
			return nil
		},
	}
}

func putCommand() *cli.Command {
	return &cli.Command{
		Name: "put", Usage: "store a value (from the argument, or stdin when omitted)", ArgsUsage: "KEY [VALUE]",
		Flags: append(clientFlags(), &cli.UintFlag{Name: "ttl", Usage: "expire after this many seconds (0: never)"}),
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 || c.NArg() > 2 {
				return cli.Exit("usage: jakiro put KEY [VALUE]", exitError)
			}
			var val []byte
			if c.NArg() == 2 {
				val = []byte(c.Args().Get(1))
			} else {
				b, err := io.ReadAll(io.LimitReader(os.Stdin, rfp.MaxValueLen+1))
				if err != nil {
					return cli.Exit(err, exitError)
				}
				val = b
			}
			cl, ctx, cancel, err := dial(c)
			if err != nil {
				return err
			}
			defer cancel()
			defer cl.Close()
			if err := cl.Put(ctx, []byte(c.Args().First()), val, uint32(c.Uint("ttl"))); err != nil {
				return opErr(err)
			}
			return nil
		},
	}
}

func delCommand() *cli.Command {
	return &cli.Command{
		Name: "del", Aliases: []string{"delete"}, Usage: "delete a key (exit 1 if not found)", ArgsUsage: "KEY",
		Flags: clientFlags(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cli.Exit("usage: jakiro del KEY", exitError)
			}
			cl, ctx, cancel, err := dial(c)
			if err != nil {
				return err
			}
			defer cancel()
			defer cl.Close()
			if err := cl.Delete(ctx, []byte(c.Args().First())); err != nil {
				return opErr(err)
			}
			return nil
		},
	}
}

func statsCommand() *cli.Command {
	return &cli.Command{
		Name: "stats", Usage: "print every partition's statistics (JSON lines)",
		Flags: clientFlags(),
		Action: func(c *cli.Context) error {
			cl, ctx, cancel, err := dial(c)
			if err != nil {
				return err
			}
			defer cancel()
			defer cl.Close()
			st, err := cl.Stats(ctx)
			if err != nil {
				return opErr(err)
			}
			for _, s := range st {
				fmt.Println(string(s))
			}
			cnt := cl.Counters()
			fmt.Fprintln(os.Stderr, "client: ops="+strconv.FormatUint(cnt.Ops, 10), "fabric-ops/op="+strconv.FormatFloat(cnt.FabricOpsPerOp(), 'f', 2, 64))
			return nil
		},
	}
}
