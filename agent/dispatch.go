package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/browser/dom"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/policy"
)

// Browser is the part of the browser engine the dispatch drives. *browser.Browser
// satisfies it; tests may substitute nothing else, since every gate must be
// proven against a real Chromium.
type Browser interface {
	NewTab(ctx context.Context, conv consent.ConversationID, background bool) (consent.TabID, error)
	Navigate(ctx context.Context, conv consent.ConversationID, id consent.TabID, rawURL string) error
	History(ctx context.Context, conv consent.ConversationID, id consent.TabID, action string) error
	Tab(id consent.TabID) (consent.TabInfo, error)
	// CloseTab closes a tab conv owns: tab_closed when it is gone already,
	// wrong_conversation when another conversation or the operator owns it.
	CloseTab(ctx context.Context, conv consent.ConversationID, id consent.TabID) error
	// Handle is the tab-level verbs of a tab conv owns (observe, act,
	// verify, upload, viewport, site tools); the browser owns the tab's
	// state behind it and ends it when the tab goes.
	Handle(ctx context.Context, conv consent.ConversationID, id consent.TabID) (*browser.Handle, error)
	// Available is nil while Chromium runs; after a crash it starts the
	// relaunch and answers browser_unavailable until the new one is up.
	Available() error
}

// Dispatcher maps each design.md §5 tool onto the consent engine and the
// browser. It is the one implementation of Surface; the MCP server, the
// demo agent and tests all go through it.
type Dispatcher struct {
	engine  *consent.Engine
	browser Browser
	policy  *policy.Policy
	audit   audit.Sink
	now     func() time.Time
	// maxUpload bounds browser_upload's decoded size (upload.go).
	maxUpload int64
	jobs      *jobs   // browser_batch jobs (batch.go)
	web       *webUse // web_use tokens and sessions (webuse.go)
	calls     inflight
}

// DispatcherConfig configures a Dispatcher. Engine and Browser are required.
type DispatcherConfig struct {
	Engine  *consent.Engine
	Browser Browser
	Policy  *policy.Policy
	Audit   audit.Sink
	// MaxUploadBytes bounds browser_upload (--max-upload-bytes); zero:
	// DefaultMaxUploadBytes. Larger files fail upload_too_large unreviewed.
	MaxUploadBytes int64
}

// NewDispatcher returns the dispatch over cfg.
func NewDispatcher(cfg DispatcherConfig) *Dispatcher {
	d := &Dispatcher{engine: cfg.Engine, browser: cfg.Browser, policy: cfg.Policy, audit: cfg.Audit, now: time.Now}
	d.maxUpload = cfg.MaxUploadBytes
	d.jobs = newJobs()
	d.web = newWebUse()
	return d
}

// Close stops every batch job, waiting for its goroutine. It leaves
// calls alone: Shutdown (which the MCP server's Close runs first) is
// what withdraws them.
func (d *Dispatcher) Close() {
	d.jobs.close()
}

var _ Surface = (*Dispatcher)(nil)

// Call runs one tool for conv. It never panics on bad input: every failure
// is an envelope with its design.md §5 code, and one audit record is written per call.
func (d *Dispatcher) Call(ctx context.Context, conv consent.ConversationID, tool string, args json.RawMessage) Result {
	start := d.now()
	ctx, end := d.calls.begin(ctx)
	defer end()
	var res Result
	var tab consent.TabID
	shutdown := context.Cause(ctx) == ErrShuttingDown
	if shutdown {
		res = fail(withdrawn(nil))
	} else {
		res, tab = d.call(ctx, conv, tool, args)
		res, shutdown = shutdownResult(ctx, res)
	}
	if tool == "web_use" {
		res = WebUseResult(res)
	}
	d.record(conv, tool, tab, args, res, shutdown, d.now().Sub(start))
	return res
}

// ErrShuttingDown is the cause Shutdown cancels running calls with.
var ErrShuttingDown = errors.New("the console is shutting down")

// ShutdownGrace is how long a console shutdown waits for in-flight calls to
// end with their results (design.md §5: every call gets a result).
const ShutdownGrace = 3 * time.Second

// Shutdown withdraws every call in flight and refuses new ones: each ends
// with a canceled result naming the shutdown — one whose action was already
// dispatched says dispatched and mayHaveChangedState — and its audit record
// says the same. It returns when all of them have returned (and their
// audit records are written) or ctx is done, whichever is first; the error
// is ctx's then. Idempotent.
func (d *Dispatcher) Shutdown(ctx context.Context) error {
	return d.calls.drain(ctx)
}

// Withdraw is Shutdown without the wait: running calls are cancelled with
// the shutdown reason and new ones refused, and it returns at once (the
// TUI calls it on its own goroutine when the operator quits).
func (d *Dispatcher) Withdraw() { d.calls.shutdown() }

// shutdownResult names the shutdown in the failure of a call that
// Shutdown cancelled, and says whether it did. Only canceled failures are
// the shutdown's doing; a call that failed otherwise, or finished, keeps
// its own result.
func shutdownResult(ctx context.Context, res Result) (Result, bool) {
	if !res.IsError || res.Code() != string(errcode.Canceled) || context.Cause(ctx) != ErrShuttingDown {
		return res, false
	}
	dispatched, _ := res.Object["dispatched"].(bool)
	changed, _ := res.Object["mayHaveChangedState"].(bool)
	return fail(withdrawn(&errcode.Error{Dispatched: dispatched, MayHaveChangedState: changed})), true
}

// withdrawn is the error of a call the shutdown ended; was says what had
// already reached the page (nil: nothing).
func withdrawn(was *errcode.Error) *errcode.Error {
	if was != nil && (was.Dispatched || was.MayHaveChangedState) {
		return &errcode.Error{
			Code:       errcode.Canceled,
			Message:    "the console shut down while this call ran: its action was already dispatched and may have changed the page; observe it when the console is back before doing anything else",
			Dispatched: true, MayHaveChangedState: true, Next: errcode.NextObserveBeforeRetry,
		}
	}
	return errcode.Errorf(errcode.Canceled, errcode.NextListTabs, "withdrawn by shutdown: the console is shutting down; any review this call waited on was withdrawn and nothing it would have allowed ran")
}

// inflight tracks running calls so Shutdown can cancel them and wait.
type inflight struct {
	mu      sync.Mutex
	closing bool
	running map[*callSlot]struct{}
	idle    chan struct{} // closed when running empties during a drain
}

type callSlot struct{ cancel context.CancelCauseFunc }

// begin registers a call; after shutdown the returned context is already
// cancelled with ErrShuttingDown. end must be called when the call's
// result and audit record are done.
func (f *inflight) begin(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing {
		cancel(ErrShuttingDown)
		return ctx, func() {}
	}
	if f.running == nil {
		f.running = map[*callSlot]struct{}{}
	}
	slot := &callSlot{cancel: cancel}
	f.running[slot] = struct{}{}
	return ctx, func() {
		cancel(nil)
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.running, slot)
		if len(f.running) == 0 && f.idle != nil {
			close(f.idle)
			f.idle = nil
		}
	}
}

// shutdown refuses new calls and cancels the running ones; it returns a
// channel closed when none runs.
func (f *inflight) shutdown() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closing = true
	for slot := range f.running {
		slot.cancel(ErrShuttingDown)
	}
	if len(f.running) == 0 {
		done := make(chan struct{})
		close(done)
		return done
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	return f.idle
}

func (f *inflight) drain(ctx context.Context) error {
	select {
	case <-f.shutdown():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *Dispatcher) call(ctx context.Context, conv consent.ConversationID, tool string, args json.RawMessage) (Result, consent.TabID) {
	if conv == "" {
		return fail(errcode.Errorf(errcode.MissingSession, errcode.NextListTabs, "this call carries no conversation identity")), ""
	}
	// After a crash every old tab is gone; the agent must hear that the
	// browser is coming back, not that its tab closed. web_use waits for
	// the restart itself (webuse.go).
	if tool != "web_use" {
		if err := d.browser.Available(); err != nil {
			return fail(err), ""
		}
	}
	if tool != "browser_job" && tool != "browser_tabs" {
		// A frozen conversation's agent lost a batch's answer (batch.go).
		// Checked before job_pending: "a job runs" must not read as the
		// answer it lost while the operator has not looked yet.
		if id := d.jobs.lostAnswer(conv); id != "" {
			_ = d.engine.Freeze(conv, id) // fails only for an ended conversation
		}
		if err := d.engine.Frozen(conv); err != nil {
			return fail(err), ""
		}
		if err := d.jobs.pending(conv); err != nil {
			return fail(err), ""
		}
	}
	switch tool {
	case "browser_tabs":
		return run(ctx, conv, args, func(_ context.Context, conv consent.ConversationID, _ TabsArgs) (Result, consent.TabID) {
			return d.tabs(conv), ""
		})
	case "browser_open":
		return run(ctx, conv, args, d.open)
	case "browser_navigate":
		return run(ctx, conv, args, d.navigate)
	case "browser_observe":
		return run(ctx, conv, args, d.observe)
	case "browser_act":
		return run(ctx, conv, args, d.act)
	case "browser_verify":
		return run(ctx, conv, args, d.verify)
	case "browser_handoff":
		return run(ctx, conv, args, d.handoff)
	case "browser_close":
		return run(ctx, conv, args, d.closeTab)
	case "browser_upload":
		return run(ctx, conv, args, d.upload)
	case "browser_batch":
		return run(ctx, conv, args, d.batch)
	case "browser_job":
		return run(ctx, conv, args, func(_ context.Context, conv consent.ConversationID, a JobArgs) (Result, consent.TabID) {
			return d.job(conv, a), ""
		})
	case "web_use":
		return run(ctx, conv, args, d.webUseCall)
	case "webmcp_list_tools":
		return run(ctx, conv, args, d.listSiteTools)
	case "webmcp_call_tool":
		return run(ctx, conv, args, d.callSiteTool)
	}
	return fail(errcode.Errorf(errcode.InvalidAction, errcode.NextListTabs, "unknown tool %q", tool)), ""
}

// run decodes args into the tool's argument shape A and runs the tool;
// arguments that do not decode never reach it.
func run[A any](ctx context.Context, conv consent.ConversationID, args json.RawMessage, tool func(context.Context, consent.ConversationID, A) (Result, consent.TabID)) (Result, consent.TabID) {
	var a A
	if err := decode(args, &a); err != nil {
		return fail(err), ""
	}
	return tool(ctx, conv, a)
}

// decode reads args strictly: an unknown field is a mistake the model
// should hear about. Only the arguments hosts add to every tool on their own
// (HostAddedArgs) are dropped first, here, so every tool ignores them alike.
func decode(args json.RawMessage, v any) error {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	args = withoutHostAddedArgs(args)
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "arguments do not match the tool's schema: %v", err)
	}
	return nil
}

func (d *Dispatcher) tabs(conv consent.ConversationID) Result {
	open, paused := liveTabs(d.engine.Snapshot(), conv)
	tabs := []map[string]any{}
	for _, t := range open {
		entry := map[string]any{
			"tabId":     string(t.ID),
			"url":       t.URL,
			"title":     t.Title,
			"visible":   t.Visible,
			"status":    string(t.Status),
			"operation": t.Operation,
		}
		if t.OpenerTabID != "" {
			entry["openerTabId"] = string(t.OpenerTabID)
		}
		tabs = append(tabs, entry)
	}
	return ok(map[string]any{"tabs": tabs, "paused": paused, "trust": TrustUntrusted})
}

// liveTabs is conv's tabs in st that are not closed, and whether conv is
// paused: what browser_tabs, tabId defaulting and web_use's list_pages see.
func liveTabs(st consent.State, conv consent.ConversationID) (tabs []consent.TabState, paused bool) {
	for _, c := range st.Conversations {
		if c.ID != conv {
			continue
		}
		for _, t := range c.Tabs {
			if t.Status != consent.TabClosed {
				tabs = append(tabs, t)
			}
		}
		return tabs, c.Paused
	}
	return nil, false
}

// MaxURLBytes bounds a URL an agent may open or navigate to (8 KiB, the
// request-line limit of common web servers; docs/decisions.md).
const MaxURLBytes = 8 << 10

// checkURL accepts only absolute http(s) URLs with a host, no credentials,
// a port (when given) in 1–65535 and at most MaxURLBytes bytes (design.md §5
// invalid_url). It runs before any review and before any tab exists.
func checkURL(raw string) (*url.URL, error) {
	if len(raw) > MaxURLBytes {
		return nil, errcode.Errorf(errcode.InvalidURL, errcode.NextNone, "the URL is %d bytes; at most %d are accepted", len(raw), MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.Opaque != "" {
		return nil, errcode.Errorf(errcode.InvalidURL, errcode.NextNone, "use an absolute http or https URL without credentials")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, errcode.Errorf(errcode.InvalidURL, errcode.NextNone, "port %s is not a valid port (1 to 65535)", p)
		}
	}
	return u, nil
}

// precheckPolicy answers website_blocked before any tab or review exists; the
// request hook enforces the same policy on every request regardless.
func (d *Dispatcher) precheckPolicy(raw string) error {
	dec := d.policy.Decide(raw, "GET", false, false)
	if dec.Allow {
		return nil
	}
	return &errcode.Error{Code: errcode.Code(dec.Code), Message: dec.Message, Next: errcode.NextNone}
}

func (d *Dispatcher) open(ctx context.Context, conv consent.ConversationID, a OpenArgs) (Result, consent.TabID) {
	if _, err := checkURL(a.URL); err != nil {
		return fail(err), ""
	}
	if err := d.precheckPolicy(a.URL); err != nil {
		return fail(err), ""
	}
	tab := consent.TabID(a.TabID)
	op, err := d.engine.Begin(ctx, conv, tab, "open")
	if err != nil {
		return fail(err), tab
	}
	defer op.End()
	created := false
	if tab == "" {
		tab, err = d.browser.NewTab(op.Context(), conv, a.Background)
		if err != nil {
			return fail(opErr(op, err)), ""
		}
		created = true
		op.BindTab(tab)
		// Site tools attach before the first navigation so the polyfill is
		// there for the first document; a failure only costs site tools.
		if err := d.attachSiteTools(op.Context(), conv, tab); err != nil {
			d.engine.Note(conv, "site tools unavailable in "+string(tab)+": "+string(errcode.Of(err)), true)
		}
		if !a.Background {
			d.engine.FocusTab(tab)
		}
	}
	if err := d.browser.Navigate(op.Context(), conv, tab, a.URL); err != nil {
		err = opErr(op, err)
		if created {
			return d.releaseTab(ctx, conv, tab, err), tab
		}
		return fail(err), tab
	}
	info, err := d.browser.Tab(tab)
	if err != nil {
		return fail(err), tab
	}
	return ok(map[string]any{
		"tabId":   string(tab),
		"url":     info.URL,
		"visible": d.visible(conv, tab),
		"next":    string(errcode.NextObserve),
		"trust":   TrustUntrusted,
	}), tab
}

// releaseTimeout bounds closing the tab of a failed open; the op's own
// context may already be done (take-over, cancel, deadline).
const releaseTimeout = 10 * time.Second

// releaseTab answers a browser_open that failed in the tab it made. The
// tab is closed, so a denied or failed open leaves nothing behind (it
// would count against tab_limit and hold a renderer). Only when the
// failure says the site may have been reached does the tab stay: what it
// shows is how the agent finds out (browser_tabs lists it).
func (d *Dispatcher) releaseTab(ctx context.Context, conv consent.ConversationID, tab consent.TabID, cause error) Result {
	var ce *errcode.Error
	if errors.As(cause, &ce) && (ce.Dispatched || ce.MayHaveChangedState) {
		return fail(cause)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := d.browser.CloseTab(cctx, conv, tab); err != nil && errcode.Of(err) != errcode.TabClosed {
		d.engine.Note(conv, "could not close the tab of a failed open ("+string(tab)+"): "+string(errcode.Of(err)), true)
	}
	return fail(cause)
}

func (d *Dispatcher) navigate(ctx context.Context, conv consent.ConversationID, a NavigateArgs) (Result, consent.TabID) {
	if (a.URL == "") == (a.Action == "") {
		return fail(errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "give url or action (back, forward, reload), not both")), ""
	}
	if a.URL != "" {
		if _, err := checkURL(a.URL); err != nil {
			return fail(err), ""
		}
		if err := d.precheckPolicy(a.URL); err != nil {
			return fail(err), ""
		}
	} else if a.Action != "back" && a.Action != "forward" && a.Action != "reload" {
		return fail(errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "action must be back, forward or reload")), ""
	}
	tab, err := d.resolveTab(conv, a.TabID)
	if err != nil {
		return fail(err), ""
	}
	op, err := d.engine.Begin(ctx, conv, tab, "navigate")
	if err != nil {
		return fail(err), tab
	}
	defer op.End()
	if a.URL != "" {
		err = d.browser.Navigate(op.Context(), conv, tab, a.URL)
	} else {
		err = d.browser.History(op.Context(), conv, tab, a.Action)
	}
	if err != nil {
		return fail(opErr(op, err)), tab
	}
	info, err := d.browser.Tab(tab)
	if err != nil {
		return fail(err), tab
	}
	return ok(map[string]any{
		"outcome": "navigation_finished",
		"url":     info.URL,
		"next":    string(errcode.NextObserve),
		"trust":   TrustUntrusted,
	}), tab
}

// readable runs the read gate for the tab's current origin and returns the
// tab's DOM handle. Every tool that looks at or acts on a page passes here.
func (d *Dispatcher) readable(op *consent.Op, conv consent.ConversationID, tab consent.TabID) (*browser.Handle, string, error) {
	dt, origin, _, err := d.readablePass(op, conv, tab)
	return dt, origin, err
}

// readablePass is readable also saying how the read gate passed (a scoped
// grant's id for the result to name).
func (d *Dispatcher) readablePass(op *consent.Op, conv consent.ConversationID, tab consent.TabID) (*browser.Handle, string, consent.Pass, error) {
	info, err := d.browser.Tab(tab)
	if err != nil {
		return nil, "", consent.Pass{}, err
	}
	origin, err := pageOrigin(info.URL)
	if err != nil {
		return nil, "", consent.Pass{}, err
	}
	pass, err := d.engine.AskGrant(op.Context(), consent.Request{
		Gate: consent.GateRead, Conversation: conv, Tab: tab, Origin: origin,
		Recheck: d.sameOrigin(tab, origin),
	})
	if err != nil {
		return nil, "", consent.Pass{}, err
	}
	dt, err := d.browser.Handle(op.Context(), conv, tab)
	if err != nil {
		return nil, "", consent.Pass{}, err
	}
	return dt, origin, pass, nil
}

// sameOrigin is the post-approval re-check: the page must still be on the
// origin the operator approved.
func (d *Dispatcher) sameOrigin(tab consent.TabID, origin string) func() error {
	return func() error {
		info, err := d.browser.Tab(tab)
		if err != nil {
			return err
		}
		now, err := pageOrigin(info.URL)
		if err != nil || now != origin {
			return errcode.Errorf(errcode.PageChanged, errcode.NextObserveBeforeRetry, "the page left %s while the review was open", origin)
		}
		if d.policy != nil && !d.policy.AllowsOrigin(origin) {
			return errcode.Errorf(errcode.WebsiteBlocked, errcode.NextNone, "%s", policy.MsgWebsiteBlocked)
		}
		return nil
	}
}

// pageOrigin is the exact origin of a tab URL; a blank tab has none to read.
func pageOrigin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errcode.Errorf(errcode.InvalidURL, errcode.NextNone, "the tab shows no web page (open a URL first)")
	}
	return u.Scheme + "://" + u.Host, nil
}

func (d *Dispatcher) observe(ctx context.Context, conv consent.ConversationID, a ObserveArgs) (Result, consent.TabID) {
	p, res, tab := d.beginPage(ctx, conv, a.TabID, "observe")
	if p == nil {
		return res, tab
	}
	defer p.op.End()
	obs, err := p.dt.Observe(p.op.Context(), dom.ObserveRequest{
		IncludeImage: a.IncludeImage, Cursor: a.Cursor, Since: a.Since, TextChars: a.TextChars,
	})
	if err != nil {
		return fail(opErr(p.op, err)), tab
	}
	fields := map[string]any{
		"observationId": obs.ID,
		"tabId":         obs.TabID,
		"url":           obs.URL,
		"title":         obs.Title,
		"viewport":      obs.Viewport,
		"scroll":        map[string]int{"x": obs.ScrollX, "y": obs.ScrollY},
		"expiresInMs":   obs.ExpiresIn,
		"counts":        obs.Counts,
		"snapshot":      obs.TextForm,
		"trust":         TrustUntrusted,
	}
	if obs.NextCursor != "" {
		fields["cursor"] = obs.NextCursor
	}
	if len(obs.LeftOut) > 0 {
		fields["leftOut"] = obs.LeftOut
	}
	res = ok(withGrant(fields, p.read))
	res.Image = obs.Image
	return res, tab
}

func (d *Dispatcher) act(ctx context.Context, conv consent.ConversationID, a ActArgs) (Result, consent.TabID) {
	if a.ObservationID == "" {
		return fail(errcode.Errorf(errcode.StaleObservation, errcode.NextObserve, "observationId is required: observe first")), ""
	}
	p, res, tab := d.beginPage(ctx, conv, a.TabID, "act")
	if p == nil {
		return res, tab
	}
	defer p.op.End()
	prep, err := p.dt.Prepare(p.op.Context(), a.ObservationID, domAction(a.Action))
	if err != nil {
		return fail(opErr(p.op, err)), tab
	}
	review := reviewAction(prep)
	pass, err := d.engine.AskGrant(p.op.Context(), consent.Request{
		Gate: consent.GateAction, Conversation: conv, Tab: tab, Origin: p.origin,
		Action: review, Recheck: d.sameOrigin(tab, p.origin),
	})
	if err != nil {
		prep.Release()
		return fail(opErr(p.op, err)), tab
	}
	receipt, err := prep.Dispatch(p.op.Context())
	if err != nil {
		return fail(opErr(p.op, err)), tab
	}
	return ok(withGrant(map[string]any{
		"dispatched": receipt.Dispatched,
		"outcome":    receipt.Outcome,
		"next":       string(errcode.NextObserve),
	}, pass)), tab
}

// checkAssertion validates a verify (browser_verify or a batch step) before
// anything touches the page.
func checkAssertion(assertion, value string) error {
	if strings.TrimSpace(value) == "" {
		return errcode.Errorf(errcode.InvalidAssertion, errcode.NextNone, "an assertion needs a non-empty value")
	}
	switch assertion {
	case dom.TextContains, dom.TextAbsent, dom.URLIs, dom.TitleContains, dom.ElementVisible:
		return nil
	}
	return errcode.Errorf(errcode.InvalidAssertion, errcode.NextNone, "assertion must be text_contains, text_absent, url_is, title_contains or element_visible")
}

// reviewAction turns a prepared action into what the review panel shows.
func reviewAction(p *dom.Prepared) *consent.Action {
	a := &consent.Action{
		Type: consent.ActionType(p.Action.Type), Text: p.Action.Text, Value: p.Action.Value,
		Label: p.Action.Label, Key: p.Action.Key, DeltaY: int(p.Action.DeltaY),
	}
	if p.Target != nil {
		a.Ref, a.Role, a.Name = p.Target.Ref, p.Target.Role, p.Target.Name
		a.Autocomplete, a.Field, a.CrossOrigin = p.Target.Autocomplete, p.Target.Field, p.Target.CrossOrigin
	}
	a.Box = p.Box
	if p.Point != nil {
		a.X, a.Y = p.Point[0], p.Point[1]
		a.Coordinate = p.Action.Type == "click"
	}
	return a
}

func (d *Dispatcher) verify(ctx context.Context, conv consent.ConversationID, a VerifyArgs) (Result, consent.TabID) {
	if err := checkAssertion(a.Assertion, a.Value); err != nil {
		return fail(err), ""
	}
	p, res, tab := d.beginPage(ctx, conv, a.TabID, "verify")
	if p == nil {
		return res, tab
	}
	defer p.op.End()
	vr, err := p.dt.Verify(p.op.Context(), a.Assertion, a.Value)
	if err != nil {
		return fail(opErr(p.op, err)), tab
	}
	return ok(map[string]any{"verified": vr.Verified, "evidence": vr.Evidence, "trust": TrustUntrusted}), tab
}

func (d *Dispatcher) handoff(_ context.Context, conv consent.ConversationID, a HandoffArgs) (Result, consent.TabID) {
	tab := consent.TabID(a.TabID)
	if tab != "" {
		owner, known := d.engine.Owner(tab)
		if !known {
			return fail(errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "tab %s is closed", tab)), tab
		}
		if owner != conv {
			return fail(errcode.Errorf(errcode.WrongConversation, errcode.NextListTabs, "that tab belongs to another conversation")), tab
		}
	}
	// A second handoff while paused changes nothing: the person already
	// has the browser, and a repeated take-over would only add noise.
	if !d.engine.Paused(conv) {
		if err := d.engine.TakeOver(conv); err != nil {
			return fail(err), tab
		}
	}
	if tab != "" {
		d.engine.FocusTab(tab)
	}
	reason := a.Reason
	if reason == "" {
		reason = "the agent asks you to take over"
	}
	d.engine.Note(conv, "handoff: "+sanitizeNote(reason)+" — press r to resume", true)
	return ok(map[string]any{"status": "paused", "next": string(errcode.NextUserResume)}), tab
}

// sanitizeNote bounds agent-supplied text before it reaches the operator's screen.
func sanitizeNote(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len([]rune(s)) > 160 {
		s = string([]rune(s)[:160]) + "…"
	}
	return s
}

// resolveTab applies "tabId may be left out when the conversation owns
// exactly one tab"; it never guesses between several.
func (d *Dispatcher) resolveTab(conv consent.ConversationID, id string) (consent.TabID, error) {
	if id != "" {
		return consent.TabID(id), nil
	}
	open, _ := liveTabs(d.engine.Snapshot(), conv)
	switch len(open) {
	case 0:
		return "", errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "this conversation has no open tab: call browser_open")
	case 1:
		return open[0].ID, nil
	}
	return "", errcode.Errorf(errcode.InvalidAction, errcode.NextListTabs, "this conversation has %d tabs: pass tabId (see browser_tabs)", len(open))
}

func (d *Dispatcher) visible(conv consent.ConversationID, tab consent.TabID) bool {
	sel := d.engine.Snapshot().Selection
	return sel.Conversation == conv && sel.Tab == tab
}

// opErr prefers the op's own reason (take-over, cancel, deadline) over the
// symptom a browser call reports when its context ends, but keeps whether
// input was already dispatched.
func opErr(op *consent.Op, err error) error {
	why := op.Err()
	if why == nil {
		return err
	}
	var ce, oe *errcode.Error
	if !errors.As(why, &oe) {
		return err
	}
	if errors.As(err, &ce) && ce.Dispatched {
		out := *oe
		out.Dispatched, out.MayHaveChangedState = true, true
		out.Next = errcode.NextObserveBeforeRetry
		return &out
	}
	return oe
}

// record writes the one audit record of a tool call: never values, only the
// redacted input summary, sizes and the outcome code.
func (d *Dispatcher) record(conv consent.ConversationID, tool string, tab consent.TabID, args json.RawMessage, res Result, shutdown bool, took time.Duration) {
	if d.audit == nil {
		return
	}
	rec := audit.Record{
		Time: d.now(), Kind: audit.KindToolCall, Conversation: string(conv), Tab: string(tab),
		Tool: tool, Input: audit.Summarize(args), Code: res.Code(), WaitMS: took.Milliseconds(),
	}
	if res.IsError {
		rec.Decision = "failed"
	} else {
		rec.Decision = "ok"
	}
	// The outcome the agent was told, in words the audit reader needs:
	// whether input reached the page and whether shutdown ended the call.
	changed, _ := res.Object["mayHaveChangedState"].(bool)
	switch {
	case shutdown && changed:
		rec.Note = "withdrawn by shutdown after dispatch: may have changed state"
	case shutdown:
		rec.Note = "withdrawn by shutdown: nothing dispatched"
	case res.IsError && changed:
		rec.Note = "dispatched: may have changed state"
	}
	if err := d.audit.Write(rec); err != nil {
		d.engine.Note(conv, fmt.Sprintf("audit write failed for %s: %v", tool, err), true)
	}
}

// pageOp is a running op on a readable page: the start every tool that looks
// at or acts on a page shares.
type pageOp struct {
	op     *consent.Op
	dt     *browser.Handle
	origin string
	read   consent.Pass // how the read gate passed
}

// beginPage resolves the tab, starts one op on it and passes the read gate.
// On failure p is nil, res is the envelope and the op has already ended.
func (d *Dispatcher) beginPage(ctx context.Context, conv consent.ConversationID, tabID, name string) (p *pageOp, res Result, tab consent.TabID) {
	tab, err := d.resolveTab(conv, tabID)
	if err != nil {
		return nil, fail(err), ""
	}
	op, err := d.engine.Begin(ctx, conv, tab, name)
	if err != nil {
		return nil, fail(err), tab
	}
	dt, origin, read, err := d.readablePass(op, conv, tab)
	if err != nil {
		res = fail(opErr(op, err))
		op.End()
		return nil, res, tab
	}
	return &pageOp{op: op, dt: dt, origin: origin, read: read}, Result{}, tab
}
