//go:build !tabwarden_nohook

package browser

// hookOn: the request hook (the browser-level Fetch domain, the CSP it
// adds, the WebSocket block list) is on. Only a test build with the tag
// tabwarden_nohook turns it off, to prove the wall holds alone.
const hookOn = true
