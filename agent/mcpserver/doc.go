// Package mcpserver serves a tool surface (an agent.Profile: agent.Default
// unless configured, dispatched through agent.Surface) to MCP hosts over
// Streamable HTTP on loopback (design.md §1, §3, §5).
//
// # Transport
//
// One endpoint, /mcp on 127.0.0.1, speaks both protocol generations of the
// MCP Go SDK. A request whose Mcp-Protocol-Version header is 2026-07-28 or
// later goes to a stateless SDK handler (the sessionless protocol: no
// Mcp-Session-Id, no handshake); every other request goes to a stateful
// handler, where an initialize negotiates 2025-11-25 (or older) and the SDK
// mints an Mcp-Session-Id. The SDK needs the two configurations because it
// accepts 2026-07-28 only on a stateless handler and sessions only on a
// stateful one; a 2026-07-28 client that probes the stateful path is told
// which versions it supports and falls back to initialize, so nothing is
// lost by routing on the header.
//
// # Who may call
//
// Before anything else, the Host header must be exactly 127.0.0.1:<port> or
// localhost:<port>, and an Origin header, when present, exactly
// http://127.0.0.1:<port> or http://localhost:<port>; anything else is 403
// (DNS rebinding: a web page in any browser on this machine must not reach
// the console). The SDK's own localhost protection stays on underneath.
// Then the SDK's bearer middleware checks the agent token: missing or
// unknown → 401 with WWW-Authenticate. Tokens are 32 random bytes,
// base64url, prefixed "tw_"; the server keeps only their SHA-256. A stateful
// session is bound to the token that created it (another token gets 403).
//
// # Conversations (design.md §3)
//
// Identity comes only from the transport: the token alone for sessionless
// requests, the token plus the MCP session id for stateful ones (each
// session is its own conversation). A conversation is registered with the
// engine on its first tool call, named "<token name> · <clientInfo.name> ·
// <short id>", and removed — its running ops cancelled, its tabs handed to
// the operator — when its session ends (DELETE, the console closes it, or
// it has had no request in flight for Config.SessionIdleTimeout, 30 min by
// default, so a client that died without DELETE does not hold its tabs
// forever), when its token is revoked, or when the server closes. Once removed it
// never comes back: a later call on the same session gets no Surface call
// (the SDK answers 404 for an ended session; a call that raced the end gets
// missing_session). Every tool call runs under a context that is cancelled
// when its conversation ends, and as soon as its caller is gone (MCP
// cancellation, the HTTP request that carried it closing, in both protocol
// generations; caller.go), with the reason as the cause, so the engine
// withdraws a review nobody waits for. While a call is in flight, a client
// that sent a progressToken gets a progress notification every 5 s.
//
// # Shutdown
//
// Close answers every call in flight before anything closes (design.md §5):
// new calls get missing_session ("the console is shutting down"); a
// Surface with a Shutdown method (agent.Dispatcher) withdraws its running
// calls, whose results name the shutdown; the server waits until those
// answers are written (all within agent.ShutdownGrace, 3 s), gives
// stateful clients a short head start to read them, and only then ends
// the conversations, closes the MCP sessions and shuts the HTTP server
// down with a deadline.
//
// # Results and audit
//
// A tool result carries agent.Result.JSON() as compact text content, the
// same object as structuredContent, isError from the result, and the image
// (if any) as image/png content.
//
// Audit (design.md §9, one record per tool call): the Surface writes the record
// of each call it runs (agent.Dispatcher does, for every transport alike);
// the server writes the record of a call it refuses before the Surface (no
// identity: missing_session), and, with Config.AuditToolCalls, of every
// dispatched call too for a Surface that does not audit. Records hold the
// tool, conversation, tab, redacted input summary (audit.Summarize) and the
// code of a failure, never values. Session start and end and token
// revocation are audited here. Gated steps inside a call are audited by the
// engine before they are dispatched, which is where fail-closed applies; a
// failed write here is logged and shown as a warning in the activity log,
// since the step it describes has already happened.
package mcpserver
