// Package server is the Jakiro server: it listens on a fabric URL, grants
// every client its request and response rings (package rfp), and runs one
// goroutine per EREW partition of the store (package kv). Only that
// goroutine touches its partition and its rings, so the hot path takes no
// lock and allocates nothing.
//
// A partition goroutine scans its clients' request rings, runs every ready
// request in one pass, and writes each result into the client's response
// slot in server memory (rfp mode) — and, when the request asks for it,
// WRITEs it into the client's memory too (reply and hybrid modes). It
// busy-polls while there is work and dozes in short sleeps when idle, so an
// idle server costs little CPU and still wakes within DozeSleep.
//
// Clients come and go at any time: a client whose connection ends is
// removed from every partition, and its rings are freed only after every
// partition goroutine has moved past it. Requests are untrusted: malformed
// slots, unknown ops, bad keys and oversize values get an error status,
// never a panic.
package server
