//go:build tabwarden_nohook

package corpus_test

// wallAlone: this build (tag tabwarden_nohook) has no request hook, so
// navigation consent is gone and managed policy stands on the wall alone.
// Only the cases that policy answers run: a request to P, an upload under
// blockBrowserUploads, and the wall families. Each must still be zero.
const wallAlone = true
