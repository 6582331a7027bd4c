package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/jakiro-kv/jakiro/client"
)

func clientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "addr", Value: defaultAddr, Usage: "server URL (shm:///path, tcp://host:port or rdma://ip:port), or a comma-separated list: keys spread over the servers", EnvVars: []string{"JAKIRO_ADDR"}},
		&cli.StringFlag{Name: "mode", Value: "auto", Usage: "rfp, reply, hybrid or auto (rfp on shm:// and rdma://, hybrid on tcp://)", EnvVars: []string{"JAKIRO_MODE"}},
		&cli.StringFlag{Name: "rfs", Value: "auto", Usage: "remote fetch size (bytes, sizes like 1KiB, or auto)", EnvVars: []string{"JAKIRO_RFS"}},
		&cli.DurationFlag{Name: "timeout", Value: 5 * time.Second, Usage: "give up after this long", EnvVars: []string{"JAKIRO_TIMEOUT"}},
		&cli.StringFlag{Name: "rdma-dev", Usage: "RDMA device (rdma:// only)", EnvVars: []string{"JAKIRO_RDMA_DEV"}},
	}
}

// dial builds a client from the common flags. The caller must call the
// returned cancel and Close.
func dial(c *cli.Context) (*client.Client, context.Context, context.CancelFunc, error) {
	mode, err := client.ParseMode(c.String("mode"))
	if err != nil {
		return nil, nil, nil, cli.Exit(fmt.Sprintf("jakiro %s: --mode: %v", c.Command.Name, err), exitError)
	}
	rfs := 0
	if s := c.String("rfs"); s != "auto" {
		n, err := size(c, "rfs")
		if err != nil {
			return nil, nil, nil, cli.Exit(fmt.Sprintf("jakiro %s: %v (or auto)", c.Command.Name, err), exitError)
		}
		rfs = int(n)
	}
	addr := c.String("addr")
	addrs, err := client.SplitAddrs(addr)
	if err != nil {
		return nil, nil, nil, cli.Exit(err, exitError)
	}
	for _, a := range addrs {
		if err := checkAddr(a); err != nil {
			return nil, nil, nil, cli.Exit(err, exitError)
		}
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	cl, err := client.Dial(ctx, addr, client.WithMode(mode), client.WithRFS(rfs))
	if err != nil {
		cancel()
		if len(addrs) == 1 {
			err = explainDial(addrs[0], c.Duration("timeout"), err)
		}
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

// nArgs checks a command's argument count; usage names the arguments.
func nArgs(c *cli.Context, lo, hi int, usage string) error {
	if n := c.NArg(); n < lo || n > hi {
		return cli.Exit(fmt.Sprintf("usage: jakiro %s %s (see `jakiro %s --help`)", c.Command.Name, usage, c.Command.Name), exitError)
	}
	return nil
}

// clientAction is a command that checks its argument count (lo to hi;
// usage names the arguments), dials the server from the common flags and
// runs run within --timeout.
func clientAction(lo, hi int, usage string, run func(c *cli.Context, ctx context.Context, cl *client.Client) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		if err := nArgs(c, lo, hi, usage); err != nil {
			return err
		}
		cl, ctx, cancel, err := dial(c)
		if err != nil {
			return err
		}
		defer cancel()
		defer cl.Close()
		return run(c, ctx, cl)
	}
}

func getCommand() *cli.Command {
	return &cli.Command{
		Name: "get", Usage: "print a key's value (exit 1 if not found)", ArgsUsage: "KEY",
		Flags: clientFlags(),
		Action: clientAction(1, 1, "KEY", func(c *cli.Context, ctx context.Context, cl *client.Client) error {
			v, err := cl.Get(ctx, []byte(c.Args().First()))
			if err != nil {
				return opErr(err)
			}
			os.Stdout.Write(v)
			if len(v) == 0 || v[len(v)-1] != '\n' {
				fmt.Println()
			}
			return nil
		}),
	}
}

func putCommand() *cli.Command {
	return &cli.Command{
		Name: "put", Usage: "store a value (from the argument, or stdin when omitted)", ArgsUsage: "KEY [VALUE]",
		Flags: storeFlags(),
		Action: clientAction(1, 2, "KEY [VALUE] (a VALUE starting with \"-\" goes after \"--\")", func(c *cli.Context, ctx context.Context, cl *client.Client) error {
			var val []byte
			if c.NArg() == 2 {
				val = []byte(c.Args().Get(1))
			} else {
				b, err := io.ReadAll(io.LimitReader(os.Stdin, client.MaxValueLen+1))
				if err != nil {
					return cli.Exit(err, exitError)
				}
				val = b
			}
			key, ttl := []byte(c.Args().First()), uint32(c.Uint("ttl"))
			if flags := uint32(c.Uint("flags")); flags != 0 {
				_, err := cl.Set(ctx, key, val, ttl, flags)
				if err != nil {
					return opErr(err)
				}
				return nil
			}
			if err := cl.Put(ctx, key, val, ttl); err != nil {
				return opErr(err)
			}
			return nil
		}),
	}
}

func delCommand() *cli.Command {
	return &cli.Command{
		Name: "del", Aliases: []string{"delete"}, Usage: "delete a key (exit 1 if not found)", ArgsUsage: "KEY",
		Flags: clientFlags(),
		Action: clientAction(1, 1, "KEY", func(c *cli.Context, ctx context.Context, cl *client.Client) error {
			if err := cl.Delete(ctx, []byte(c.Args().First())); err != nil {
				return opErr(err)
			}
			return nil
		}),
	}
}
