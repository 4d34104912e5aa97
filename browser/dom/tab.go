package dom

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
)

//go:embed world.js
var worldJS string

const (
	// worldName names our isolated world; Chromium keeps one world per
	// name per document, so its global (and the ref map) persists across calls.
	worldName = "tabwarden"
	// DefaultLifetime is how long an observation stays usable (design.md §6 ref).
	DefaultLifetime = 15 * time.Second
	// keepObservations bounds the history kept for since diffs and cursors.
	keepObservations = 16
)

// Options configure a Tab. The zero value is the design.md behaviour.
type Options struct {
	// Lifetime of an observation; zero means DefaultLifetime.
	Lifetime time.Duration
	// Now is the clock; nil means time.Now. Tests inject one to age
	// observations without sleeping.
	Now func() time.Time
	// Ended, when set, is done when the tab ends (closed by the page, the
	// operator or the agent). A call under way then stops at once:
	// Chromium never answers a call on a target it destroyed, and the
	// caller would otherwise wait out the call's deadline and report a
	// timeout for a tab that closed.
	Ended context.Context
}

// Tab is the observation and action state of one browser tab. Its methods
// are safe for concurrent use, but the registry runs one operation per tab
// at a time (busy), which is what keeps an observation's meaning simple.
type Tab struct {
	page     *rod.Page
	id       string
	ended    context.Context
	lifetime time.Duration
	now      func() time.Time

	mu      sync.Mutex
	world   proto.RuntimeExecutionContextID // 0: not created for this document yet
	seq     int
	obs     map[string]*observation
	order   []string // observation ids, oldest first
	snap    snapCache
	overlay bool // DOM+Overlay enabled on the session
	cursor  int  // generation of the drawn cursor; a newer draw wins the hide
	// cursorFor is how long the cursor stays after the release: cursorShown,
	// unless a test stretches it to photograph the cursor on a slow machine.
	cursorFor time.Duration

	// beforeInput, when set by a test, runs just before the first input
	// event of a dispatch.
	beforeInput func()
}

func (t *Tab) inputStarts() {
	probeInput(t.id)
	if t.beforeInput != nil {
		t.beforeInput()
	}
}

// NewTab wraps page; tabID is the registry's opaque id, used in headers.
func NewTab(page *rod.Page, tabID string, opt Options) *Tab {
	t := &Tab{page: page, id: tabID, ended: opt.Ended, lifetime: opt.Lifetime, now: opt.Now, obs: map[string]*observation{}, cursorFor: cursorShown}
	if t.lifetime <= 0 {
		t.lifetime = DefaultLifetime
	}
	if t.now == nil {
		t.now = time.Now
	}
	return t
}

// ID is the tab id given to NewTab.
func (t *Tab) ID() string { return t.id }

// Invalidate expires every observation of the tab (take-over, resume, or
// anything else the registry knows makes them meaningless).
func (t *Tab) Invalidate() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, o := range t.obs {
		o.invalid = true
	}
}

// call returns the page bound to ctx, capped at cdpedge.Call.
func (t *Tab) call(ctx context.Context) (*rod.Page, context.CancelFunc) {
	c, cancel := context.WithTimeout(ctx, cdpedge.Call)
	if t.ended == nil {
		return t.page.Context(c), cancel
	}
	stop := context.AfterFunc(t.ended, cancel)
	return t.page.Context(c), func() { stop(); cancel() }
}

// hasEnded reports whether the tab ended (Options.Ended).
func (t *Tab) hasEnded() bool { return t.ended != nil && t.ended.Err() != nil }

// worldID returns the isolated world's execution context, creating it for
// the current document when needed.
func (t *Tab) worldID(ctx context.Context) (proto.RuntimeExecutionContextID, error) {
	id, _, err := t.worldCtx(ctx)
	return id, err
}

// worldCtx is worldID that also says whether the context was created by
// this call, so run can install the world script in its first evaluation.
func (t *Tab) worldCtx(ctx context.Context) (id proto.RuntimeExecutionContextID, created bool, err error) {
	t.mu.Lock()
	id = t.world
	t.mu.Unlock()
	if id != 0 {
		return id, false, nil
	}
	p, cancel := t.call(ctx)
	defer cancel()
	tree, err := proto.PageGetFrameTree{}.Call(p)
	if err != nil {
		return 0, false, err
	}
	w, err := proto.PageCreateIsolatedWorld{FrameID: tree.FrameTree.Frame.ID, WorldName: worldName}.Call(p)
	if err != nil {
		return 0, false, err
	}
	t.mu.Lock()
	t.world = w.ExecutionContextID
	t.mu.Unlock()
	return w.ExecutionContextID, true, nil
}

func (t *Tab) dropWorld(id proto.RuntimeExecutionContextID) {
	t.mu.Lock()
	if t.world == id {
		t.world = 0
	}
	t.mu.Unlock()
}

// run evaluates fn(args...) on the isolated world's __tw object and returns
// the string it returns. It installs the world script on a fresh document,
// and recreates the world once when the document changed under it.
//
// The install goes in the same evaluation as the call (the script is
// idempotent and its completion value is the call's): the first call on
// every new document, the observe after each navigation, is then one
// round trip rather than three (probe, install, call).
func (t *Tab) run(ctx context.Context, fn string, args ...any) (string, error) {
	var b strings.Builder
	b.WriteString("globalThis.__tw ? __tw.")
	b.WriteString(fn)
	b.WriteByte('(')
	for i, a := range args {
		if i > 0 {
			b.WriteByte(',')
		}
		j, err := json.Marshal(a)
		if err != nil {
			return "", err
		}
		b.Write(j)
	}
	b.WriteString(") : undefined")
	expr := b.String()
	install := false
	for attempt := 0; ; attempt++ {
		id, created, err := t.worldCtx(ctx)
		if err != nil {
			return "", err
		}
		src := expr
		if install || created {
			src = worldJS + "\n;" + expr
		}
		v, undef, err := t.eval(ctx, id, src)
		if cdpedge.Gone(err) && attempt < 2 {
			t.dropWorld(id)
			continue
		}
		if err != nil {
			return "", err
		}
		if !undef {
			return v, nil
		}
		if attempt >= 2 {
			return "", errors.New("isolated world script did not install")
		}
		install = true
	}
}

func (t *Tab) eval(ctx context.Context, id proto.RuntimeExecutionContextID, expr string) (string, bool, error) {
	p, cancel := t.call(ctx)
	defer cancel()
	res, err := proto.RuntimeEvaluate{Expression: expr, ContextID: id, ReturnByValue: true, Silent: true}.Call(p)
	if err != nil {
		return "", false, err
	}
	if res.ExceptionDetails != nil {
		msg := res.ExceptionDetails.Text
		if res.ExceptionDetails.Exception != nil {
			msg += " " + res.ExceptionDetails.Exception.Description
		}
		return "", false, fmt.Errorf("isolated world: %s", msg)
	}
	if res.Result.Type == proto.RuntimeRemoteObjectTypeUndefined {
		return "", true, nil
	}
	return res.Result.Value.Str(), false, nil
}

// runJSON is run with the result decoded into out.
func (t *Tab) runJSON(ctx context.Context, out any, fn string, args ...any) error {
	s, err := t.run(ctx, fn, args...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(s), out); err != nil {
		return fmt.Errorf("isolated world %s: %w", fn, err)
	}
	return nil
}

// pageState is what an observation must still match to be usable.
type pageState struct {
	Token   string  `json:"token"`
	Muts    int     `json:"muts"`
	Scrolls int     `json:"scrolls"`
	SX      float64 `json:"sx"`
	SY      float64 `json:"sy"`
	VW      float64 `json:"vw"`
	VH      float64 `json:"vh"`
	DPR     float64 `json:"dpr"`
	Href    string  `json:"href"`
	Title   string  `json:"title"`
}

func (t *Tab) state(ctx context.Context) (pageState, error) {
	var s pageState
	err := t.runJSON(ctx, &s, "stateJSON")
	return s, err
}

// changed names the expiry rule that s violates relative to base, or "".
func (base pageState) changed(s pageState) string {
	switch {
	case s.Token != base.Token || s.Href != base.Href:
		return "the page navigated"
	case s.VW != base.VW || s.VH != base.VH || s.DPR != base.DPR:
		return "the viewport changed"
	case s.SX != base.SX || s.SY != base.SY || s.Scrolls != base.Scrolls:
		return "the page scrolled"
	case s.Muts != base.Muts:
		return "the page changed"
	}
	return ""
}

func newID(seq int) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("o%d-%s", seq, hex.EncodeToString(b[:]))
}
