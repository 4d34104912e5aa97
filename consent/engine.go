package consent

import (
	"context"
	"time"

	"github.com/tabwarden/tabwarden/consent/audit"
)

// Defaults from DESIGN §3 and §4 (ref values).
const (
	DefaultReviewDelay   = 500 * time.Millisecond
	MinReviewDelay       = 250 * time.Millisecond
	DefaultReviewTimeout = 60 * time.Second
	DefaultOpDeadline    = 30 * time.Second
	ActivityLimit        = 200
)

// MinReviewTimeout and MaxReviewTimeout bound --review-timeout (the CLI
// enforces them; tests use shorter timeouts here): under 10 s an operator
// cannot read a panel, and a review that waits over 30 min has no agent
// left waiting for it.
const (
	MinReviewTimeout = 10 * time.Second
	MaxReviewTimeout = 30 * time.Minute
)

// Config configures an Engine. Zero durations take the defaults above.
// ReviewDelay below MinReviewDelay is accepted here (tests use short
// delays); the CLI enforces the minimum.
type Config struct {
	Profile Profile
	// Floor is the most permissive profile managed policy allows ("" = none).
	// The effective profile is the stricter of Profile and Floor.
	Floor         Profile
	ReviewDelay   time.Duration
	ReviewTimeout time.Duration
	OpDeadline    time.Duration
	// Audit receives every review shown, decision, take-over, resume and
	// revocation, synchronously; a decision's record is written and flushed
	// before Ask returns. Nil: no audit.
	Audit audit.Sink
	Info  Info
	// Now is the clock (tests may inject one). Nil: time.Now.
	Now func() time.Time
	// EndedTabGrace is how long the tabs of an ended conversation stay
	// open before the engine has them closed (EventCloseTabs) unless the
	// operator keeps them (KeepTabs). Zero: DefaultEndedTabGrace.
	EndedTabGrace time.Duration
	// AfterFunc runs f once d has passed on the clock of Now, returning a
	// stop func; the ended-tab grace uses it. Nil: time.AfterFunc. Tests
	// inject a fake clock's.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
}

// Engine is the gate engine (DESIGN §4). Safe for concurrent use.
type Engine struct {
	impl
}

// New returns an Engine with cfg applied.
func New(cfg Config) *Engine { return newEngine(cfg) }

// Close ends the engine: running ops are cancelled and pending reviews
// resolve canceled, timers stop, events already queued are delivered and
// the dispatch goroutine exits before Close returns, so no goroutine of the
// engine outlives it. Later calls to Begin and Ask fail canceled. Close is
// idempotent; it must not be called from a listener (it waits for the
// dispatcher that runs listeners).
func (e *Engine) Close() { e.close() }

// Profile returns the effective profile (after the policy floor).
func (e *Engine) Profile() Profile { return e.profile() }

// AddConversation registers a conversation. The first conversation added
// becomes the selection when nothing is selected.
func (e *Engine) AddConversation(id ConversationID, name string) { e.addConversation(id, name) }

// RemoveConversation ends a conversation: its running op is cancelled, its
// pending reviews resolve canceled, its grants are dropped and its tabs
// become operator tabs, which close after Config.EndedTabGrace unless the
// operator keeps them (State.Ended, KeepTabs, EventCloseTabs).
func (e *Engine) RemoveConversation(id ConversationID) { e.removeConversation(id, "") }

// EndConversation is RemoveConversation for a caller that is gone, with
// why (e.g. "agent token x revoked"): its pending reviews are withdrawn and
// audited with the reason, and its ops fail canceled saying it.
func (e *Engine) EndConversation(id ConversationID, why string) { e.removeConversation(id, why) }

// PutTab adds or updates a tab as the browser reports it. A tab with an
// empty Conversation is an operator tab.
func (e *Engine) PutTab(t TabInfo) { e.putTab(t) }

// RemoveTab forgets a closed tab: its navigation grants are revoked, its
// pending reviews resolve tab_closed and a running op on it is cancelled.
func (e *Engine) RemoveTab(id TabID) { e.removeTab(id) }

// Owner returns the conversation owning tab (empty for operator tabs) and
// whether the tab is known.
func (e *Engine) Owner(id TabID) (ConversationID, bool) { return e.owner(id) }

// Begin starts an operation of conv on tab (tab may be empty for ops that
// create a tab or touch none). It fails with missing_session (empty conv),
// paused (conversation taken over), tab_closed (unknown tab),
// wrong_conversation (tab owned by another conversation or by the
// operator) or busy (another op runs on the tab). The op's context is done
// when its deadline passes (not counting time a shown review waits for the
// operator), when the operator cancels it or takes over, or when ctx is done.
func (e *Engine) Begin(ctx context.Context, conv ConversationID, tab TabID, name string) (*Op, error) {
	return e.begin(ctx, conv, tab, name)
}

// Ask gates req. It returns nil at once when a grant covers req; otherwise
// it queues a review and blocks until the operator decides, the review times
// out, the op (if any runs on req.Tab) ends or is revoked, or ctx is done.
// After an approval it re-checks the engine's own state (conversation still
// owns the tab, not paused, not cancelled) and then req.Recheck, and only
// then records the grant and returns nil. Errors are *Error with
// dispatched:false: user_denied, timeout, needs_attention, paused, canceled,
// tab_closed, wrong_conversation, or the recheck's code.
func (e *Engine) Ask(ctx context.Context, req Request) error { return e.ask(ctx, req) }

// Covered reports whether a grant already covers req (no review would be shown).
func (e *Engine) Covered(req Request) bool { return e.covered(req) }

// Decide resolves the focused review. approve=false denies. It returns
// ErrTooEarly (and reports it in the activity log and to listeners) when the
// review has been on screen for less than the review delay, ErrNoSuchReview
// when it is unknown or resolved, ErrNotShown when it is not on screen.
func (e *Engine) Decide(reviewID string, approve bool) error { return e.decide(reviewID, approve) }

// Select moves the operator's focus; an empty tab picks the conversation's
// tab with the oldest pending review, else its first tab. Listeners get
// EventSelect so the browser brings the tab to front.
func (e *Engine) Select(conv ConversationID, tab TabID) { e.selectTab(conv, tab) }

// FocusTab makes tab the selected tab if its conversation is the selected
// one (a foreground open in the visible conversation); otherwise it does
// nothing, so an agent can never switch the operator's visible conversation.
func (e *Engine) FocusTab(tab TabID) { e.focusTab(tab) }

// TakeOver pauses conv: its running op is cancelled (paused), its pending
// reviews resolve paused, navigation and profile grants are revoked.
func (e *Engine) TakeOver(conv ConversationID) error { return e.takeOver(conv) }

// Resume ends a take-over. Only the operator calls it. Navigation consent is
// asked again afterwards.
func (e *Engine) Resume(conv ConversationID) error { return e.resume(conv) }

// Cancel cancels conv's running op(s) and pending reviews (canceled) and
// revokes the conversation's navigation grants.
func (e *Engine) Cancel(conv ConversationID) error { return e.cancel(conv) }

// Paused reports whether conv is taken over.
func (e *Engine) Paused(conv ConversationID) bool { return e.paused(conv) }

// Note appends a line to the activity log (never site content).
func (e *Engine) Note(conv ConversationID, text string, warn bool) { e.note(conv, text, warn) }

// SetInfo replaces the header information.
func (e *Engine) SetInfo(info Info) { e.setInfo(info) }

// Snapshot returns the current state for rendering.
func (e *Engine) Snapshot() State { return e.snapshot() }

// Changes returns a channel that receives a value after any state change.
// Delivery coalesces: one pending signal stands for any number of changes;
// read Snapshot after it. The returned func unsubscribes.
func (e *Engine) Changes() (<-chan struct{}, func()) { return e.changes() }

// Listen registers a listener for control events; events are delivered in
// order and never dropped. The returned func unregisters.
func (e *Engine) Listen(fn func(Event)) func() { return e.listen(fn) }

// WaitIdle blocks until no review is pending and no op runs, or ctx is done.
func (e *Engine) WaitIdle(ctx context.Context) error { return e.waitIdle(ctx) }

// Op is one running operation on a tab.
type Op struct {
	opImpl
}

// Context is done when the op must stop (deadline, cancel, take-over, tab close).
func (o *Op) Context() context.Context { return o.context() }

// Err returns the *Error explaining why Context is done, or nil.
func (o *Op) Err() error { return o.err() }

// BindTab attaches a tab created by this op (browser_open) so busy, take-over
// and review-wait accounting apply to it.
func (o *Op) BindTab(tab TabID) { o.bindTab(tab) }

// End finishes the op and frees the tab.
func (o *Op) End() { o.end() }
