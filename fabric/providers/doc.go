// Package providers registers every fabric provider built into this
// binary: shm and tcp always, verbs (rdma://) when built with -tags rdma.
// Import it for its side effect.
package providers
