// Package servertest runs Jakiro servers as separate processes for tests
// that must kill, pause and restart them: the test binary re-executes
// itself as a server (TestMain calls ServeIfChild, or Serve with its own
// configuration when Listen is set). Start returns once the server
// listens; Kill is SIGKILL (a crash: no goodbye to clients); Term is
// SIGTERM and checks a clean exit; cleanup terms what still runs.
package servertest
