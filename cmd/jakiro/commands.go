package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/jakiro-kv/jakiro/client"
)

// The memcached commands. Each failed condition has its own exit status,
// so a script can tell them apart: 1 not found (also get and del), 3 not
// stored (add of an existing key; replace, append or prepend of a missing
// one), 4 exists (cas found another version), 5 not a number (incr/decr).
const (
	exitNotStored  = 3
	exitExists     = 4
	exitNotNumeric = 5
)

// cmdErr maps an SDK error to the command's exit status.
func cmdErr(err error) error {
	switch {
	case errors.Is(err, client.ErrNotStored):
		return cli.Exit(err, exitNotStored)
	case errors.Is(err, client.ErrExists):
		return cli.Exit(err, exitExists)
	case errors.Is(err, client.ErrNotNumeric):
		return cli.Exit(err, exitNotNumeric)
	}
	return opErr(err)
}

// valueArg is argument i, or stdin when there are only i arguments.
func valueArg(c *cli.Context, i int) ([]byte, error) {
	if c.NArg() > i {
		return []byte(c.Args().Get(i)), nil
	}
	b, err := io.ReadAll(io.LimitReader(os.Stdin, client.MaxValueLen+1))
	if err != nil {
		return nil, cli.Exit(err, exitError)
	}
	return b, nil
}

// uintArg parses argument i as an unsigned number of bits bits.
func uintArg(c *cli.Context, i int, name string, bits int) (uint64, error) {
	n, err := strconv.ParseUint(c.Args().Get(i), 10, bits)
	if err != nil {
		return 0, cli.Exit(fmt.Sprintf("jakiro %s: %s %q is not an unsigned %d-bit number", c.Command.Name, name, c.Args().Get(i), bits), exitError)
	}
	return n, nil
}

func storeFlags() []cli.Flag {
	return append(clientFlags(),
		&cli.UintFlag{Name: "ttl", Usage: "expire after this many seconds (0: never)"},
		&cli.UintFlag{Name: "flags", Usage: "32 bits stored with the value (memcached's client flags)"})
}

// storeCommand is add, replace, append or prepend.
func storeCommand(name, usage string, run func(ctx context.Context, cl *client.Client, key, val []byte, ttl, flags uint32) (uint64, error)) *cli.Command {
	return &cli.Command{
		Name: name, Usage: usage, ArgsUsage: "KEY [VALUE]",
		Flags: storeFlags(),
		Action: clientAction(1, 2, "KEY [VALUE] (stdin when omitted)", func(c *cli.Context, ctx context.Context, cl *client.Client) error {
			val, err := valueArg(c, 1)
			if err != nil {
				return err
			}
			if _, err := run(ctx, cl, []byte(c.Args().First()), val, uint32(c.Uint("ttl")), uint32(c.Uint("flags"))); err != nil {
				return cmdErr(err)
			}
			return nil
		}),
	}
}

func commandCommands() []*cli.Command {
	return []*cli.Command{
		storeCommand("add", "store a value only if the key is absent (exit 3 if it exists)", func(ctx context.Context, cl *client.Client, k, v []byte, ttl, flags uint32) (uint64, error) {
			return cl.Add(ctx, k, v, ttl, flags)
		}),
		storeCommand("replace", "store a value only if the key exists (exit 3 if absent)", func(ctx context.Context, cl *client.Client, k, v []byte, ttl, flags uint32) (uint64, error) {
			return cl.Replace(ctx, k, v, ttl, flags)
		}),
		storeCommand("append", "add to the end of a value, keeping its TTL and flags (exit 3 if the key is absent)", func(ctx context.Context, cl *client.Client, k, v []byte, _, _ uint32) (uint64, error) {
			return cl.Append(ctx, k, v)
		}),
		storeCommand("prepend", "add to the start of a value (exit 3 if the key is absent)", func(ctx context.Context, cl *client.Client, k, v []byte, _, _ uint32) (uint64, error) {
			return cl.Prepend(ctx, k, v)
		}),
		{
			Name: "gets", Usage: "print a key's version and flags on one line, then its value (exit 1 if not found)", ArgsUsage: "KEY",
			Flags: clientFlags(),
			Action: clientAction(1, 1, "KEY", func(c *cli.Context, ctx context.Context, cl *client.Client) error {
				it, err := cl.GetItem(ctx, []byte(c.Args().First()))
				if err != nil {
					return cmdErr(err)
				}
				fmt.Printf("%d %d\n", it.Version, it.Flags)
				printValue(it.Value)
				return nil
			}),
		},
		{
			Name: "cas", Usage: "store a value only if the key's version (from gets) is still VERSION (exit 4 if not, 1 if absent)", ArgsUsage: "KEY VERSION [VALUE]",
			Flags: storeFlags(),
			Action: clientAction(2, 3, "KEY VERSION [VALUE]", func(c *cli.Context, ctx context.Context, cl *client.Client) error {
				ver, err := uintArg(c, 1, "VERSION", 64)
				if err != nil {
					return err
				}
				val, err := valueArg(c, 2)
				if err != nil {
					return err
				}
				if _, err := cl.CompareAndSwap(ctx, []byte(c.Args().First()), val, uint32(c.Uint("ttl")), uint32(c.Uint("flags")), ver); err != nil {
					return cmdErr(err)
				}
				return nil
			}),
		},
		counterCommand("incr", "add DELTA (default 1) to a decimal value and print it (exit 5 if not a number, 1 if absent)", false),
		counterCommand("decr", "subtract DELTA (default 1), stopping at 0, and print the result", true),
		{
			Name: "touch", Usage: "give a key a new TTL in seconds, 0 for none (exit 1 if absent or expired)", ArgsUsage: "KEY TTL",
			Flags: clientFlags(),
			Action: clientAction(2, 2, "KEY TTL", func(c *cli.Context, ctx context.Context, cl *client.Client) error {
				ttl, err := uintArg(c, 1, "TTL", 32)
				if err != nil {
					return err
				}
				if err := cl.Touch(ctx, []byte(c.Args().First()), uint32(ttl)); err != nil {
					return cmdErr(err)
				}
				return nil
			}),
		},
		{
			Name: "gat", Usage: "print a key's value and give it a new TTL (get and touch)", ArgsUsage: "KEY TTL",
			Flags: clientFlags(),
			Action: clientAction(2, 2, "KEY TTL", func(c *cli.Context, ctx context.Context, cl *client.Client) error {
				ttl, err := uintArg(c, 1, "TTL", 32)
				if err != nil {
					return err
				}
				it, err := cl.GetAndTouch(ctx, []byte(c.Args().First()), uint32(ttl))
				if err != nil {
					return cmdErr(err)
				}
				printValue(it.Value)
				return nil
			}),
		},
		{
			Name: "flush", Usage: "drop every item, now or after --delay seconds", ArgsUsage: " ",
			Flags: append(clientFlags(), &cli.UintFlag{Name: "delay", Usage: "flush after this many seconds"}),
			Action: clientAction(0, 0, "", func(c *cli.Context, ctx context.Context, cl *client.Client) error {
				if err := cl.Flush(ctx, uint32(c.Uint("delay"))); err != nil {
					return cmdErr(err)
				}
				return nil
			}),
		},
	}
}

func counterCommand(name, usage string, decr bool) *cli.Command {
	return &cli.Command{
		Name: name, Usage: usage, ArgsUsage: "KEY [DELTA]",
		Flags: clientFlags(),
		Action: clientAction(1, 2, "KEY [DELTA]", func(c *cli.Context, ctx context.Context, cl *client.Client) error {
			delta := uint64(1)
			if c.NArg() == 2 {
				var err error
				if delta, err = uintArg(c, 1, "DELTA", 64); err != nil {
					return err
				}
			}
			n, err := cl.Counter(ctx, []byte(c.Args().First()), client.CounterArgs{Delta: delta, Decr: decr})
			if err != nil {
				return cmdErr(err)
			}
			fmt.Println(n)
			return nil
		}),
	}
}

// printValue writes a value and a newline unless it ends with one.
func printValue(v []byte) {
	os.Stdout.Write(v)
	if len(v) == 0 || v[len(v)-1] != '\n' {
		fmt.Println()
	}
}
