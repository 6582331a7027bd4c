package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/urfave/cli/v2"
)

// cpuProfileFlag profiles the load generator (this process, not the
// servers it starts): where a client spends its time is the question
// most benchmark runs end with.
var cpuProfileFlag = &cli.StringFlag{Name: "cpuprofile", EnvVars: []string{"JAKIRO_BENCH_CPUPROFILE"},
	Usage: "write a CPU profile of this process (the load generator) to `FILE`"}

func startProfile(c *cli.Context) error {
	path := c.String(cpuProfileFlag.Name)
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("cpuprofile: %w", err)
	}
	profileFile = f
	return nil
}

var profileFile *os.File

func stopProfile(*cli.Context) error {
	if profileFile == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := profileFile.Close()
	profileFile = nil
	return err
}
