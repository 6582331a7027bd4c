//go:build rdma

package verbs

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"unsafe"

	"github.com/jakiro-kv/jakiro/fabric"
)

func init() { fabric.Register("rdma", provider{}) }

type provider struct{}

// target is a parsed rdma:// URL.
type target struct {
	host string
	port int
	dev  string // required device name, "" for whatever rdma_cm resolves
	src  string // dialer's source IP, "" for the routing default
}

const resolveTimeoutMs = 2000

func parseURL(u *url.URL, o fabric.Options) (target, error) {
	host, ps, err := net.SplitHostPort(u.Host)
	if err != nil {
		return target{}, fmt.Errorf("verbs: address %q: %w", u.String(), err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return target{}, fmt.Errorf("verbs: address %q: bad port", u.String())
	}
	if net.ParseIP(host) == nil {
		return target{}, fmt.Errorf("verbs: address %q: host must be an IP address", u.String())
	}
	t := target{host: host, port: port, dev: o.Device}
	for k, v := range u.Query() {
		switch k {
		case "dev":
			t.dev = v[0]
		case "src":
			if net.ParseIP(v[0]) == nil {
				return target{}, fmt.Errorf("verbs: address %q: src must be an IP address", u.String())
			}
			t.src = v[0]
		case "gid":
			return target{}, fmt.Errorf("verbs: address %q: rdma_cm picks the GID from the IP; use src=<IP of that GID>", u.String())
		default:
			return target{}, fmt.Errorf("verbs: address %q: unknown option %q", u.String(), k)
		}
	}
	return t, nil
}

func checkDev(id *C.struct_rdma_cm_id, want string) error {
	if want == "" {
		return nil
	}
	if got := C.GoString(C.jk_dev_name(id)); got != want {
		return fmt.Errorf("verbs: address resolves to device %q, not %q", got, want)
	}
	return nil
}

func (provider) Dial(ctx context.Context, u *url.URL, o fabric.Options) (fabric.Setup, error) {
	t, err := parseURL(u, o)
	if err != nil {
		return nil, err
	}
	ev, err := newEvChan()
	if err != nil {
		return nil, err
	}
	var id *C.struct_rdma_cm_id
	if rc, err := C.rdma_create_id(ev.ch, &id, nil, C.RDMA_PS_TCP); rc != 0 {
		ev.stop()
		ev.destroy()
		return nil, fmt.Errorf("verbs: rdma_create_id: %w", err)
	}
	c := newConn(ev, id, o, true)
	fail := func(err error) (fabric.Setup, error) {
		c.Close()
		return nil, err
	}
	chost, csrc := C.CString(t.host), C.CString(t.src)
	rc := C.jk_resolve_addr(id, csrc, chost, C.int(t.port), resolveTimeoutMs)
	C.free(unsafe.Pointer(chost))
	C.free(unsafe.Pointer(csrc))
	if rc != 0 {
		return fail(errnoErr("rdma_resolve_addr "+u.Host, rc))
	}
	if _, err := c.waitEvent(ctx, C.RDMA_CM_EVENT_ADDR_RESOLVED); err != nil {
		return fail(fmt.Errorf("verbs: resolving %s: %w", u.Host, err))
	}
	trace(stepAddrResolved)
	if rc, err := C.rdma_resolve_route(id, resolveTimeoutMs); rc != 0 {
		return fail(fmt.Errorf("verbs: rdma_resolve_route %s: %w", u.Host, err))
	}
	if _, err := c.waitEvent(ctx, C.RDMA_CM_EVENT_ROUTE_RESOLVED); err != nil {
		return fail(fmt.Errorf("verbs: route to %s: %w", u.Host, err))
	}
	trace(stepRouteResolved)
	if err := checkDev(id, t.dev); err != nil {
		return fail(err)
	}
	ini, resp, err := rdAtom(id.verbs)
	if err != nil {
		return fail(err)
	}
	c.initDepth, c.respRes = min(uint8(16), uint8(min(ini, 255))), min(uint8(16), uint8(min(resp, 255)))
	if err := c.initVerbs(); err != nil {
		return fail(err)
	}
	trace(stepDialerVerbs)
	return &setup{c: c}, nil
}
