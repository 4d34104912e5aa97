package consent

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Defaults from design.md §3 and §4 (ref values).
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
	// GrantWindow is how long a scoped grant (`s`) lasts before policy's
	// cap. Zero: DefaultGrantWindow.
	GrantWindow time.Duration
	// GrantLimits is what managed policy allows of scoped grants; the
	// zero value allows every class with no cap (SetGrantLimits reloads).
	GrantLimits GrantLimits
}

// Engine is the gate engine (design.md §4). Safe for concurrent use.
//
// All engine state sits behind one mutex. Audit writes and event queueing
// happen under it, so records and events come out in the order the state
// changed; listener calls happen on the dispatcher, outside it.
type Engine struct {
	mu     sync.Mutex
	cfg    Config
	eff    Profile
	closed bool

	seq uint64 // creation order of conversations, tabs and reviews
	run string // random per engine: review ids are "r<run>-<seq>"
	// names keeps every conversation's display name for the console's life
	// (a few bytes each), so activity lines name a conversation that ended.
	names   map[ConversationID]string
	convs   map[ConversationID]*conv
	tabs    map[TabID]*tab
	tabOps  map[TabID]*Op
	ops     map[*Op]struct{}
	queue   []*review // pending, oldest first
	focused *review
	sel     Selection
	info    Info
	// screens counts the SSH screens open per operator name.
	screens map[string]int
	// autoShow: a review was asked or one on screen settled since the last
	// refocus, so an empty screen takes the oldest waiting review;
	// screenHolds counts screens busy with input (HoldAutoShow).
	autoShow    bool
	screenHolds int

	activity []Activity

	subs    map[int]chan struct{}
	nextSub int

	disp *dispatcher

	// ended holds the conversations whose tabs wait out their grace
	// (ended.go); graceGen tells a stale grace timer from the live one.
	ended    map[ConversationID]*ending
	graceGen uint64

	// scoped holds the live scoped grants by id (scoped.go); limits is
	// managed policy's say on them.
	scoped map[string]*scopedGrant
	limits GrantLimits
}

// New returns an Engine with cfg applied.
func New(cfg Config) *Engine {
	if cfg.ReviewDelay <= 0 {
		cfg.ReviewDelay = DefaultReviewDelay
	}
	if cfg.ReviewTimeout <= 0 {
		cfg.ReviewTimeout = DefaultReviewTimeout
	}
	if cfg.OpDeadline <= 0 {
		cfg.OpDeadline = DefaultOpDeadline
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.EndedTabGrace <= 0 {
		cfg.EndedTabGrace = DefaultEndedTabGrace
	}
	if cfg.GrantWindow <= 0 {
		cfg.GrantWindow = DefaultGrantWindow
	}
	e := &Engine{
		cfg:    cfg,
		eff:    effectiveProfile(cfg.Profile, cfg.Floor),
		convs:  map[ConversationID]*conv{},
		names:  map[ConversationID]string{},
		tabs:   map[TabID]*tab{},
		tabOps: map[TabID]*Op{},
		ended:  map[ConversationID]*ending{},
		ops:    map[*Op]struct{}{},
		subs:   map[int]chan struct{}{},
		info:   cfg.Info,
		disp:   newDispatcher(),
		run:    newRunID(),
		scoped: map[string]*scopedGrant{},
		limits: cfg.GrantLimits,
	}
	go e.disp.run()
	return e
}

// newRunID is a short random prefix for this engine's review ids, so ids
// stay unique in an audit log that several runs append to.
func newRunID() string {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano()%0xffffff, 16)
	}
	return hex.EncodeToString(b[:])
}

// Close ends the engine: running ops are cancelled and pending reviews
// resolve canceled, timers stop, events already queued are delivered and
// the dispatch goroutine exits before Close returns, so no goroutine of the
// engine outlives it. Later calls to Begin and Ask fail canceled. Close is
// idempotent; it must not be called from a listener (it waits for the
// dispatcher that runs listeners).
func (e *Engine) Close() {
	e.mu.Lock()
	if !e.closed {
		for _, r := range append([]*review(nil), e.queue...) {
			e.resolveLocked(r, outcome{err: errcode.Errorf(errcode.Canceled, errcode.NextNone, "console is shutting down"), decision: "canceled", by: "engine"})
		}
		for op := range e.ops {
			op.cancelLocked(errcode.Errorf(errcode.Canceled, errcode.NextNone, "console is shutting down"))
		}
		for _, en := range e.ended {
			en.stop()
		}
		for _, g := range e.scoped {
			if g.stop != nil {
				g.stop()
			}
		}
		e.closed = true
		e.commitLocked()
	}
	e.mu.Unlock()
	e.disp.stop()
}

func (e *Engine) now() time.Time { return e.cfg.Now() }

// Profile returns the effective profile (after the policy floor).
func (e *Engine) Profile() Profile { return e.eff }

// commitLocked ends every mutation: move focus and poke subscribers.
func (e *Engine) commitLocked() {
	e.refocusLocked()
	for _, ch := range e.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
