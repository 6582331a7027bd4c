//go:build rdma

package verbs

import "sync/atomic"

// joinTrace, when set (BenchmarkJoin), is told each step of a join as it
// ends: the dialer's address and route resolution and its verbs
// resources, and the listener's handling of a connect request. Nil in
// production: a join pays one atomic load a step.
var joinTrace atomic.Pointer[func(step joinStep)]

type joinStep int

const (
	stepAddrResolved  joinStep = iota // dialer: rdma_resolve_addr's event
	stepRouteResolved                 // dialer: rdma_resolve_route's event
	stepDialerVerbs                   // dialer: PD, CQ, QP made
	stepRequestIn                     // listener: a connect request's event
	stepAcceptorVerbs                 // listener: its PD, CQs, QP made
	joinSteps
)

func trace(s joinStep) {
	if f := joinTrace.Load(); f != nil {
		(*f)(s)
	}
}
