// Package webmcp serves website tools (design.md §7): it discovers the tools a
// page registers through document.modelContext, lets only descriptors that
// pass the sanitizer be listed, hands out opaque toolIds, and runs calls in
// the page — through Chromium's native WebMCP CDP domain when the browser
// has it, else through a polyfill with the same page-facing API.
//
// It asks no questions. The caller (agent dispatch) runs the gates through
// consent in this order, and this package's API is shaped for it:
//
//	l, _ := broker.List(ctx, conv, tab)             // after the read gate
//	c, err := broker.Prepare(ctx, conv, tab, id, in) // stale_tool, wrong_conversation, invalid_input: no review
//	engine.Ask(ctx, consent.Request{Gate: consent.GateAction, ToolCall: c.ToolCall(), Recheck: c.Fresh, ...})
//	res, err := c.Invoke(ctx)                         // too_many_requests, execution_timeout, result_too_large, invalid_result
//	engine.Ask(ctx, consent.Request{Gate: consent.GateDisclosure, Disclosure: c.Disclosure(res), ...})
//	// deliver res only when that Ask returned nil; otherwise result_withheld
//
// # Invariants
//
//   - Nothing a site registers is listed unchecked. Sanitize enforces the
//     name rule with a hand loop, strips control characters, bounds every
//     string and the schema (64 KiB, depth 32, 5000 nodes, and our own 100
//     $ref), and rejects pattern, patternProperties, format and the
//     dynamic/identity keywords wherever they stand in schema position
//     (a property *named* "pattern" is a name, not a keyword). $ref may only
//     name a root #/$defs/<name> or #/definitions/<name>. No website regular
//     expression is ever compiled: the validator sees a schema only after
//     the walks proved it has none. The listed, validated and digested
//     schema is our canonical re-serialization, never the site's bytes.
//   - Each failure is exactly one rejectedTools entry; invalid tools never
//     count against the quotas (32 per frame, 128 per tab), so junk cannot
//     push a valid tool out.
//   - A toolId is random and stands for (conversation, tab, document
//     revision, frame and its generation, name, descriptor digest). Prepare,
//     Fresh and Invoke re-check all of them against the live page:
//     navigation, frame loss, unregistration or a changed descriptor is
//     stale_tool; another conversation's toolId is wrong_conversation.
//   - Input is validated (≤128 KiB, against the accepted schema) before any
//     review; validation errors name schema locations, never input values.
//     Results are bounded (256 KiB) and must be JSON. This package logs
//     nothing and keeps no input or result beyond the call.
//   - At most Options.MaxConcurrent (4) executions per tab; each is bounded
//     by Options.ExecTimeout (60 s). Timeout, the op context ending,
//     CancelConversation (take-over) and RemoveTab cancel the call in the
//     page (WebMCP.cancelInvocation, or the polyfill's cancel, which fires
//     the same toolcancel event).
//   - Every CDP call has a deadline; the event pump only updates maps and
//     hands responses to one-slot channels, so it never blocks.
//
// # Frames
//
// Eligible frames are the top document, frames same-origin with it, and
// cross-origin frames delegated with <iframe allow="tools">; a frame whose
// ancestor is ineligible is ineligible. Permissions-Policy tools=()
// excludes a frame. With native WebMCP, Chromium enforces this itself
// (registerTool rejects with NotAllowedError in a cross-origin frame
// without delegation and under tools=()) and the host filters again with
// Page.getPermissionsPolicyState. Without it the browser does not know the
// "tools" feature, so the host reads the owner <iframe>'s allow attribute
// over DOM.getFrameOwner/DOM.describeNode and each document's
// Permissions-Policy response header from Network.responseReceived.
// Out-of-process frames (cross-site frames under site isolation) live in
// their own CDP sessions: the Site turns on Target.setAutoAttach (iframes
// only, flat, paused at start so the polyfill is in before the frame's
// first script, then resumed) on the tab's session and on each child's, and
// lists and calls their tools in their session. For a *rod.Page it reads
// the browser-wide event stream and keeps only the tab's session and its
// children; another Page implementation delivers only its own session, so
// its out-of-process frames are not discovered. Close turns auto-attach off
// so no later frame waits for a debugger that is gone.
// Chromium refuses some registrations natively (bad names, a missing
// description, duplicates); those never reach the host and so are not in
// rejectedTools on the native path.
//
// # Polyfill and its bridge
//
// When the browser lacks WebMCP, Attach installs polyfill.js with
// Page.addScriptToEvaluateOnNewDocument in the main world (pages must be
// able to call registerTool), so it runs in every new document before any
// page script. It captures the builtins it uses before the page can patch
// them, keeps registrations in a closure, and defines document.modelContext
// as a frozen, non-configurable, non-writable own property of document: a
// page can neither replace nor wrap it.
//
// The bridge is a function held in the private field #bridge of that one
// ModelContext instance. Private fields are unreadable to every script
// (there is no reflection for them) but visible to CDP
// (Runtime.getProperties' privateProperties). The host reaches it without
// running page code: Runtime.evaluate("document") in the frame's default
// context (document is unforgeable), then the modelContext property only
// when it is a non-configurable data property, then #bridge, then
// Runtime.callFunctionOn on that object. The constructor refuses a second
// instance, so a page cannot mint a ModelContext around a bridge of its own.
//
// What a page cannot do: reach the bridge (no name, no reference, no
// private-field access); forge a registration for another frame (the host
// attributes every registration to the frame whose execution context it
// read — a CDP fact, never page data — and cross-origin frames cannot touch
// each other's documents; same-origin frames are one principal on the web
// and may register in each other's documents, as natively); approve
// anything (approvals exist only in consent, host-side; there is no channel
// from page to gate). What a page can do is what it could do anyway: run
// its own tools through its own executeTool, which never involves the host.
package webmcp
