package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

var errTODO = errors.New("not yet")

func runFabric(e *env) error    { return errTODO }
func runClients(e *env) error   { return errTODO }
func runLatency(e *env) error   { return errTODO }
func runGetRatio(e *env) error  { return errTODO }
func runValueSize(e *env) error { return errTODO }
func runRFS(e *env) error       { return errTODO }
func runSkew(e *env) error      { return errTODO }
func runMixed(e *env) error     { return errTODO }
func runCompare(e *env) error   { return errTODO }
func ycsbCommand() *cli.Command { return &cli.Command{Name: "ycsb"} }
