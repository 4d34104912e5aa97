package consent

import "time"

// Gate is one of the four independent gates of design.md §4.
type Gate string

const (
	GateNavigation Gate = "navigation"
	GateRead       Gate = "read"
	GateAction     Gate = "action"
	GateDisclosure Gate = "disclosure"
)

// Profile is the consent profile (--consent). Ordered from strictest to most
// permissive; a policy floor caps how permissive the effective profile may be.
type Profile string

const (
	ProfileStrict  Profile = "strict"
	ProfileThread  Profile = "thread"
	ProfileTrusted Profile = "trusted"
)

// ConversationID is the unit of ownership (design.md §3). It comes from the
// transport, never from tool arguments.
type ConversationID string

// TabID is the console's opaque tab id (not the CDP target id).
type TabID string

// ReviewKind says which panel the TUI draws for a review.
type ReviewKind string

const (
	KindNavigation ReviewKind = "navigation" // "Allow origin in this tab"
	KindRead       ReviewKind = "read"       // "Allow reading this origin"
	KindAction     ReviewKind = "action"     // "Allow once": click, fill, select, key, scroll, coordinate click
	KindPlan       ReviewKind = "plan"       // "Allow these N actions"
	KindUpload     ReviewKind = "upload"     // "Allow once": filename, size, sha256
	KindToolCall   ReviewKind = "tool_call"  // "Allow once": site-tool name + redacted input summary
	KindDisclosure ReviewKind = "disclosure" // "Share result": the complete bounded result
	KindThread     ReviewKind = "thread"     // profile thread: "Allow browser control for this thread"
	KindSession    ReviewKind = "session"    // profile trusted: "Allow for this session"
)

// ActionType is the kind of a page action (design.md §5 act).
type ActionType string

const (
	ActionClick  ActionType = "click"
	ActionFill   ActionType = "fill"
	ActionSelect ActionType = "select"
	ActionKey    ActionType = "key"
	ActionScroll ActionType = "scroll"
)

// Action describes one page action for its review panel. Text is the text
// to enter for fill; it is shown to the operator but never written to the
// audit log (only its size and digest are).
type Action struct {
	Type ActionType
	// Target element, when the action has one.
	Ref  string
	Role string
	Name string
	// Coordinate click: X, Y in CSS pixels; Coordinate is true.
	Coordinate bool
	X, Y       float64
	// Box is the target element's border box (x, y, width, height in CSS
	// pixels of the tab's viewport) when the action was prepared; nil when
	// not known. It marks the target for the operator's eyes while the
	// review is on screen (design.md §4, §13) and is never audited.
	Box    *[4]float64
	Text   string // fill
	Value  string // select by value
	Label  string // select by label
	Key    string // key
	DeltaY int    // scroll
	// Verify steps of a plan: Assertion and its value (Text).
	Assertion string
	// What the page says of the target, for the never-grantable list of
	// design.md §4 (scoped.go): its autocomplete attribute and its name or id
	// attribute (a field that looks like payment or identity data always
	// asks), and whether the step leaves the page's origin (a link or form
	// to another origin, a frame of another origin). Site content: shown
	// to no agent, never audited.
	Autocomplete string
	Field        string
	CrossOrigin  bool
}

// Upload describes a file upload for its review.
type Upload struct {
	Filename string
	Size     int64
	SHA256   string // hex
	Ref      string
	Role     string
	Name     string
}

// ToolCall describes a site-tool call for its review.
type ToolCall struct {
	ToolName     string
	ToolTitle    string
	InputSummary string // already redacted (audit.Summarize)
	// InputValues is the input itself for the operator's screen, secret-
	// looking keys masked (audit.MaskSecrets). It lives only in the review,
	// like a disclosure's result, and is never audited.
	InputValues  string
	ReadOnlyHint bool // advisory only; shown, never trusted
}

// Disclosure is a site-tool result awaiting "Share result". Result is the
// complete bounded result (≤ 256 KiB JSON); it lives only in memory, in the
// review, and is dropped when the review resolves.
type Disclosure struct {
	ToolName string
	Result   string
	Size     int
	SHA256   string
}

// Request is what a caller asks the engine to gate. Exactly one of the
// detail fields matches Gate / the kind the engine derives from it.
type Request struct {
	Gate         Gate
	Conversation ConversationID
	Tab          TabID
	// Origin is the exact origin "scheme://host[:port]" of the page or
	// destination. Required for every gate.
	Origin string

	Action     *Action
	Plan       []Action
	Upload     *Upload
	ToolCall   *ToolCall
	Disclosure *Disclosure

	// Consequence is the sentence the panel shows under "what will happen".
	// Empty: the engine supplies the default for the gate.
	Consequence string

	// Recheck runs after approval and before Ask returns nil: policy, tab
	// identity and owner, page revision/URL, observation age. A non-nil
	// error fails the ask with dispatched:false (its Code if it is an
	// *errcode.Error, else page_changed).
	Recheck func() error
}

// Review is a pending gate as the operator sees it.
type Review struct {
	ID               string
	Kind             ReviewKind
	Gate             Gate
	Title            string // e.g. "Allow website navigation?"
	ApproveLabel     string // the panel's primary label, e.g. "Allow origin in this tab"
	Conversation     ConversationID
	ConversationName string
	Tab              TabID
	Origin           string // raw (ASCII/punycode) exact origin
	OriginUnicode    string // decoded form; equals Origin when there is no punycode
	Consequence      string

	Action     *Action
	Plan       []Action
	Upload     *Upload
	ToolCall   *ToolCall
	Disclosure *Disclosure

	Created time.Time
	// ShownAt is when the review last came on screen (zero while queued
	// behind an invisible tab). The key-ahead guard counts from it.
	ShownAt time.Time
	// Deadline is when the review times out (zero while not yet shown).
	Deadline time.Time
	// Scope says what `s` would allow on this panel, or why it would not;
	// nil on panels without `s` (navigation, disclosure, thread, session).
	Scope *ScopeOffer
	// QueueDeadline, in a snapshot, is when a review waiting in the queue
	// fails needs_attention unless it comes on screen first:
	// ReviewTimeout after it was queued. Zero while on screen.
	QueueDeadline time.Time
}

// TabStatus is the coarse state shown in the inventory.
type TabStatus string

const (
	TabIdle    TabStatus = "idle"
	TabLoading TabStatus = "loading"
	TabRunning TabStatus = "running"
	TabPaused  TabStatus = "paused"
	TabClosed  TabStatus = "closed"
)

// TabInfo is what the browser layer reports about a tab.
type TabInfo struct {
	ID           TabID
	Conversation ConversationID // empty for an operator tab
	URL          string
	Title        string
	OpenerTabID  TabID
	Loading      bool
	// BlockedRequests counts sub-resources the policy failed on the current
	// document ("This page may be incomplete…").
	BlockedRequests int
}

// TabState is a tab as the TUI renders it.
type TabState struct {
	TabInfo
	Status          TabStatus
	Operation       string // running operation name, "" when none
	Visible         bool
	NeedsAttention  bool // a review for it waits in the queue
	Blocked         bool // BlockedRequests > 0
	NavigationGrant []string
}

// ConversationState is a conversation and its tabs as the TUI renders it.
type ConversationState struct {
	ID     ConversationID
	Name   string
	Paused bool // taken over by the operator
	// PausedBy names the operator who took over (while Paused).
	PausedBy string
	// PauseNote, while Paused, is what the console itself says the
	// operator does now, when it knows better than the screen's generic
	// take-over text (the headless demo signs in for the operator).
	PauseNote string
	// Frozen is set while the agent cannot know a batch's outcome; every op
	// but browser_tabs and browser_job fails job_unknown until the
	// operator clears it (Engine.ClearFreeze).
	Frozen         *Freeze
	NeedsAttention bool
	Running        bool
	Grants         []string // human-readable active grants, e.g. "read https://a.test"
	// Scoped are the conversation's live scoped grants (chips), oldest first.
	Scoped []ScopedGrant
	Tabs   []TabState
}

// Activity is one line of the activity log. It never holds site content,
// typed text or results.
type Activity struct {
	Time         time.Time
	Conversation ConversationID
	// Name is the conversation's display name when the line was written,
	// so the line still names it after the conversation has ended.
	Name string
	Text string
	Warn bool
}

// Info is the header information the engine does not own itself; the
// wiring sets it (browser state, MCP endpoint, policy summary).
type Info struct {
	Browser  string
	Endpoint string
	Policy   string
}

// Selection is the operator's focus in the TUI.
type Selection struct {
	Conversation ConversationID
	Tab          TabID
}

// State is an immutable snapshot of everything the TUI renders.
type State struct {
	Profile       Profile
	ReviewDelay   time.Duration
	Info          Info
	Conversations []ConversationState
	OperatorTabs  []TabState
	// Queue holds every pending review, oldest first.
	Queue []Review
	// Focused is the review on screen: the oldest pending review of the
	// visible tab. Nil when none.
	Focused   *Review
	Selection Selection
	Activity  []Activity // newest last, bounded
	// Ended lists the ended conversations whose tabs close at CloseAt
	// unless the operator keeps them, oldest first. Their tabs are also in
	// OperatorTabs.
	Ended []EndedConversation
	// Grants lists every live scoped grant, oldest first (the G list).
	Grants []ScopedGrant
	// Now is the engine's clock when the snapshot was taken: remaining
	// grant time is Expires - Now.
	Now time.Time
	// Operators names the operators on SSH screens now, one entry per
	// screen, sorted (OperatorJoined / OperatorLeft).
	Operators []string
}

// EventKind names a control event for listeners (the browser layer).
type EventKind string

const (
	EventSelect        EventKind = "select"       // bring Tab to front
	EventTakeOver      EventKind = "take_over"    // pause Conversation: stop loads, clear observations
	EventResume        EventKind = "resume"       // Conversation resumed by the operator
	EventCancel        EventKind = "cancel"       // running op of Conversation cancelled
	EventReviewShown   EventKind = "review_shown" // Review came on screen
	EventDecision      EventKind = "decision"     // Review resolved
	EventKeyIgnored    EventKind = "key_ignored"  // key-ahead guard fired
	EventTabRemoved    EventKind = "tab_removed"
	EventFreeze        EventKind = "freeze"         // Conversation frozen: the agent lost batch Job's answer
	EventFreezeCleared EventKind = "freeze_cleared" // the operator cleared Conversation's freeze
	EventCloseTabs     EventKind = "close_tabs"     // close Tabs: the grace of ended Conversation is over
	EventTabsKept      EventKind = "tabs_kept"      // the operator kept the tabs of ended Conversation
)

// Event is delivered, in order and never dropped, to listeners registered
// with Engine.Listen. Listeners run outside the engine lock and must not block.
type Event struct {
	Kind         EventKind
	Conversation ConversationID
	Tab          TabID
	Review       *Review
	Approved     bool
	Job          string  // the batch job of EventFreeze and EventFreezeCleared
	Tabs         []TabID // the tabs of EventCloseTabs
}
