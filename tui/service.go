package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tabwarden/tabwarden/consent"
)

// Service is the slice of the consent engine the TUI consumes.
// *consent.Engine satisfies it.
type Service interface {
	Snapshot() consent.State
	// Changes signals after any state change; signals coalesce.
	Changes() (<-chan struct{}, func())
	// Decide resolves the focused review; consent.ErrTooEarly means the
	// key-ahead guard fired and nothing was decided.
	Decide(reviewID string, approve bool) error
	Select(conv consent.ConversationID, tab consent.TabID)
	TakeOver(conv consent.ConversationID) error
	Resume(conv consent.ConversationID) error
	Cancel(conv consent.ConversationID) error
	// ClearFreeze ends a conversation's freeze (its agent lost a batch
	// submit's answer); the operator presses it after looking at the job.
	ClearFreeze(conv consent.ConversationID) error
	// KeepTabs keeps the tabs of an ended conversation (State.Ended) open
	// instead of letting them close when its grace is over.
	KeepTabs(conv consent.ConversationID) error
}

var _ Service = (*consent.Engine)(nil)

// MintedToken is a new agent token as the operator sees it: its name, where
// its configuration goes, and that configuration ready to paste (it
// contains the secret).
type MintedToken struct {
	Name   string
	Where  string
	Config string
}

// TokenMinter is the agent-token side of the console for the `n` panel. It
// is optional: the MCP server provides it.
type TokenMinter interface {
	// Hosts lists the MCP hosts a token's configuration can be printed for.
	Hosts() []string
	// MintFor mints a token named after host (name-2, … when taken) and
	// returns host's configuration for it.
	MintFor(host string) (MintedToken, error)
	// Tokens lists the live tokens' names.
	Tokens() []string
	// RevokeToken ends a token and its conversations.
	RevokeToken(name string) error
}

// Options configures the TUI. The zero value is usable.
type Options struct {
	// Version is shown in the header; empty shows nothing.
	Version string
	// Now is the clock for remaining-time text. Nil: time.Now. Tests fix it
	// so renders are stable.
	Now func() time.Time
	// Minter mints agent tokens for `n`. Nil: `n` explains that tokens
	// arrive with the MCP server.
	Minter TokenMinter
	// ActivityLines caps the activity log section; 0 means as many as fit.
	// The rest of the log stays in the engine and the audit file.
	ActivityLines int
	// FlashFor is how long a flash message stays. Zero: 2 s.
	FlashFor time.Duration
	// BeforeQuit, when set, runs when the operator confirms quitting,
	// before the live conversations are cancelled: the console withdraws
	// the agents' calls in flight there, so they hear of the shutdown
	// rather than of a cancel. It must not block.
	BeforeQuit func()
	// Headless says the console's Chromium has no window, so a take-over
	// tells the operator what they can do instead of pointing at one.
	Headless bool
	// Operator is who this screen's keys act for (zero: the console's own
	// terminal, consent.LocalOperator). An SSH screen sets the operator of
	// the session's verified key.
	Operator consent.Operator
	// Remote marks an SSH operator's screen (design.md §11): its selection
	// and scrolling are its own (the engine's selection stays the local
	// screen's and the browser's front tab), q ends only this session and
	// cancels nothing, and tokens are minted at the console's terminal.
	Remote bool
	// StartTask, when set, gives the built-in agent a new task (design.md
	// §12): `p` opens a prompt line and enter hands it the typed task. The
	// console sets it when it runs with a model provider; nil hides `p`.
	// It is called outside Update and may take a moment; its error is
	// shown with its design.md §5 code (errcode.Of).
	StartTask func(task string) error

	// Page is the browser side of the page view (`v`, design.md §13). Nil:
	// `v` says the view needs the browser (--script mode).
	Page PageSource
	// PageProtocol is how the page view draws (--page-view): "" or
	// PageAuto asks this screen's terminal (kitty, then iTerm2, then
	// sixel, else half-blocks; half-blocks under tmux or screen); any
	// other value is used without asking.
	PageProtocol PageProtocol
	// Notify is how this screen calls the operator on a new review
	// (--notify): "" or NotifyDesktop rings the bell and raises a desktop
	// notification where the screen's terminal shows one, NotifyBell only
	// rings, NotifyOff does neither. The title's pending count shows
	// whatever the mode.
	Notify NotifyMode
	// Program adds options to the bubbletea program Run starts (an SSH
	// session's input, output, environment and window size).
	Program []tea.ProgramOption
}

// OperatorService is the part of the engine that attributes a screen's
// keys to its operator. *consent.Engine satisfies it; a Service without
// it gets the local calls (Decide, TakeOver, Resume, Cancel, ClearFreeze,
// KeepTabs).
type OperatorService interface {
	DecideAs(consent.Decision) error
	TakeOverAs(consent.ConversationID, consent.Operator) error
	ResumeAs(consent.ConversationID, consent.Operator) error
	CancelAs(consent.ConversationID, consent.Operator) error
	ClearFreezeAs(consent.ConversationID, consent.Operator) error
	KeepTabsAs(consent.ConversationID, consent.Operator) error
}

var _ OperatorService = (*consent.Engine)(nil)

const defaultFlashFor = 2 * time.Second
