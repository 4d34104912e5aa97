// Package stacktest builds tabwarden's whole stack for a test, the way the
// console builds it: a consent engine, a headless Chromium launched through
// browser.Launch with the engine as its gate, agent.Dispatcher
// conversations over both, the MCP server with an MCP Go SDK client
// session, a fixture site whose request log is the witness, and an
// Operator who answers reviews as the person at the keyboard would.
//
// Defaults are what the end-to-end suites want (Config says which); a test
// changes only what it is about. Everything the kit starts it also ends,
// at the test's cleanup (Start) or in TestMain (Shared.Close): no
// goroutine, server or Chromium outlives its owner, and only what the kit
// started is ended.
//
// Only _test.go files import it: the shipped binary never links it
// (TestNoShippedPackageImportsTheKit, and cmd/tabwarden's
// TestBinaryLinksNoTesting for the binary itself).
package stacktest
