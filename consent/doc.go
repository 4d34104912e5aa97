// Package consent is the gate engine of design.md §4: it decides whether an
// agent's step may run, asks the operator when no grant covers it, and
// remembers the grants the operator gives. It knows nothing about terminals
// or browsers; the TUI renders its State and calls Decide, the browser layer
// calls Begin/Ask and listens for control events.
//
// # Gates, grants and profiles
//
// Four independent gates: navigation, read, action, disclosure. The
// effective profile is the stricter of Config.Profile and Config.Floor
// (strict < thread < trusted in permissiveness; an unknown or empty profile
// counts as strict).
//
//   - strict: a navigation grant covers exactly origin × tab × conversation;
//     a read grant covers exactly origin × conversation; an action, plan,
//     upload or site-tool call is allowed once and never becomes a grant; a
//     disclosure shares one result and never becomes a grant.
//   - thread: the first navigation, read or scroll ask of a conversation
//     shows KindThread ("Allow browser control for this thread"); approving
//     it grants navigation, reading and scrolling on every tab of the
//     conversation. Other actions, plans, uploads and site-tool calls still
//     ask "Allow once".
//   - trusted: the first ask of anything but a disclosure shows KindSession
//     ("Allow for this session"); approving it covers navigation, reading and
//     every action, plan, upload and site-tool call of the conversation.
//
// Disclosure asks in every profile: results may carry secrets. A denied
// disclosure fails result_withheld, an unanswered one disclosure_timeout;
// the result lives only in the review and is dropped when it resolves. Origins are
// compared exactly after lower-casing scheme and host and dropping the
// scheme's default port, so another port or scheme is another origin.
// Grants live in memory only.
//
// # Invariants
//
//   - A review resolves exactly once; the first decision wins and later
//     ones get ErrNoSuchReview.
//   - The operator can only decide the focused review (the oldest pending
//     review of the visible tab), and only after it has been on screen for
//     ReviewDelay (the key-ahead guard). A review that leaves the screen
//     goes back to the queue and the guard starts afresh when it returns.
//   - Revocation is fenced: each review captures its conversation's and
//     tab's epoch when created. TakeOver, Cancel, RemoveConversation and
//     RemoveTab bump the epoch. After an approval, Ask re-checks the engine
//     state (conversation exists and is not paused, tab still owned, op not
//     cancelled, epochs unchanged), then req.Recheck, then re-checks the
//     engine state again under the lock and only then records the grant and
//     returns nil. So an approval racing a revocation never yields a grant or
//     a nil Ask once the revocation has happened.
//   - A grant is recorded only when every check passed; a decision's audit
//     record is written before Ask returns, and if writing it fails the
//     approval fails closed (browser_operation_failed, dispatched:false).
//   - Audit records and activity lines never hold typed text, values or
//     site-tool results: only sizes and sha256 digests.
//   - Operator tabs (no conversation) are never touchable by agents.
//   - A frozen conversation (Freeze: its agent lost the answer to an
//     approved batch submit) stays frozen until the operator's ClearFreeze;
//     nothing else clears it, not the job ending nor a take-over. Freezing
//     stops nothing: Begin and Ask still serve the job's own steps, and the
//     dispatch turns the agent's other calls away with Frozen's job_unknown.
//
// # Selection
//
// A tab is visible iff it is the selected tab of the selected conversation.
// The first conversation added is selected; when the selected conversation
// has no selected tab, the first tab put into it is selected. Select(conv,
// "") picks the tab with the conversation's oldest pending review, else its
// first tab; Select("", tab) selects an operator tab (nothing is ever
// reviewed there). FocusTab moves only within the selected conversation.
// Every change of the selected tab is sent to listeners as EventSelect.
//
// # Time
//
// An op has a budget of OpDeadline that does not run while one of its
// reviews waits for the operator, on screen or in the queue. A review on
// screen times out ReviewTimeout after it was shown (timeout;
// disclosure_timeout for a disclosure); a review in the queue fails
// needs_attention (next: review) ReviewTimeout after it was queued, with
// or without an op. Timers use real time; Config.Now only stamps records.
//
// When the screen is empty just after a review was asked or the one on
// screen was settled, the oldest waiting review comes on screen by itself
// and its tab is selected, unless the selected conversation is taken over
// or a screen holds (HoldAutoShow). Select away from a review does not
// bring it back.
// A snapshot gives each queued review its QueueDeadline: when one of these
// ends it unless it comes on screen first.
//
// # Callers that are gone
//
// A pending review is withdrawn at once when its caller is gone: the
// context of its Ask, or of the op it belongs to, ends (before or after the
// op's End), or EndConversation ends its conversation. It resolves
// canceled and leaves the screen, and its decision record's note says
// "withdrawn: " and why (the context's cause, as the MCP server gives it).
//
// # Delivery semantics
//
//   - Changes: coalescing. Each subscriber has a one-slot channel and the
//     engine sends without blocking, so one pending signal stands for any
//     number of changes; read Snapshot after it. Screen refreshes may drop.
//   - Listen: every control event, in the order the engine made the
//     changes, never dropped. Events are queued under the engine lock and
//     delivered by one dispatch goroutine per engine, outside the lock, to
//     listeners in registration order. Decide and Ask never wait for
//     listeners. A listener must not block; it may call the engine.
//   - Audit: synchronous, under the engine lock, never dropped; so an
//     audit.Sink must not call back into the engine.
//   - Close delivers the events already queued, stops the dispatcher and all
//     timers, cancels running ops and pending reviews; no goroutine of the
//     engine outlives it.
package consent
