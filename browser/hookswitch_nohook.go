//go:build tabwarden_nohook

package browser

// hookOn is off in this test build (tag tabwarden_nohook): no Fetch
// domain, no added CSP, no WebSocket block list. Navigation consent is
// gone with it; managed policy is left to the wall alone, which is what
// the wall-alone corpus proves. Never ship this build.
const hookOn = false
