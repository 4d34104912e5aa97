package browser

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
)

// tab is one page target as the console knows it. Fields are guarded by
// registry.mu.
type tab struct {
	id      consent.TabID
	target  proto.TargetTargetID
	conv    consent.ConversationID // empty: operator tab
	opener  consent.TabID
	popup   bool
	session proto.TargetSessionID
	url     string
	title   string
	loading bool
	blocked int // policy-failed sub-resources of the current document
	closed  bool
	// denial is why the last main-frame request was refused (consent or
	// policy); Navigate reports it instead of Chromium's net error.
	denial error
	seq    uint64 // creation order, for stable listings

	// Lifecycle of the newest main-frame document, fed by the event loop
	// so Navigate can wait for its load without a subscription race.
	loader    proto.NetworkLoaderID
	lifecycle map[proto.PageLifecycleEventName]bool
	lifeCh    chan struct{} // closed and replaced on each lifecycle event
	// navs counts main-frame document requests the hook has seen; a new
	// one means the page is already navigating away (a script or meta
	// refresh), and its load may never come.
	navs uint64
	// agentNavs counts Navigate/History calls in flight on this tab; the
	// hook refuses their requests once the conversation is taken over.
	agentNavs int
	// sent counts main-frame requests the hook let go to the site: once it
	// moves, a navigation that then fails may have reached the site.
	sent uint64
	// handle is the agent's handle on the tab (handle.go), made on first
	// use; it ends when the tab closes.
	handle *Handle
}

func (t *tab) info() consent.TabInfo {
	return consent.TabInfo{
		ID:              t.id,
		Conversation:    t.conv,
		URL:             t.url,
		Title:           t.title,
		OpenerTabID:     t.opener,
		Loading:         t.loading,
		BlockedRequests: t.blocked,
	}
}

// registry maps the console's tab ids to targets. Closed tabs stay in byID
// so a later use is tab_closed rather than "unknown".
type registry struct {
	mu       sync.Mutex
	byID     map[consent.TabID]*tab
	byTarget map[proto.TargetTargetID]*tab
	bySess   map[proto.TargetSessionID]*tab
	// creating counts NewTab calls between Target.createTarget and claim.
	// While it is positive an unknown opener-less target may be ours, so it
	// waits in unclaimed instead of becoming an operator tab.
	creating int
	// pending counts each conversation's NewTab calls in flight, so that
	// concurrent opens cannot pass tab_limit together.
	pending   map[consent.ConversationID]int
	unclaimed map[proto.TargetTargetID]proto.TargetTargetInfo
	// guarded maps the upload guard's auto-attached page sessions to
	// their targets (file chooser events arrive on them).
	guarded map[proto.TargetSessionID]proto.TargetTargetID
	seq     uint64
	front   consent.TabID // the tab the operator selected last
}

func (r *registry) init() {
	r.byID = map[consent.TabID]*tab{}
	r.byTarget = map[proto.TargetTargetID]*tab{}
	r.bySess = map[proto.TargetSessionID]*tab{}
	r.unclaimed = map[proto.TargetTargetID]proto.TargetTargetInfo{}
	r.pending = map[consent.ConversationID]int{}
	r.guarded = map[proto.TargetSessionID]proto.TargetTargetID{}
}

func newTabID() consent.TabID {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // the runtime guarantees it never fails
	}
	return consent.TabID("tab_" + hex.EncodeToString(b[:]))
}

// add registers a target; r.mu must be held.
func (r *registry) add(info proto.TargetTargetInfo, conv consent.ConversationID, opener consent.TabID) *tab {
	r.seq++
	t := &tab{id: newTabID(), target: info.TargetID, conv: conv, opener: opener, popup: opener != "",
		url: info.URL, title: info.Title, seq: r.seq, lifeCh: make(chan struct{})}
	for r.byID[t.id] != nil {
		t.id = newTabID()
	}
	r.byID[t.id] = t
	r.byTarget[info.TargetID] = t
	return t
}

// sweep turns unclaimed targets into operator tabs once no NewTab is in
// flight; r.mu must be held.
func (r *registry) sweep() []consent.TabInfo {
	if r.creating > 0 {
		return nil
	}
	var out []consent.TabInfo
	for id, info := range r.unclaimed {
		delete(r.unclaimed, id)
		out = append(out, r.add(info, "", "").info())
	}
	return out
}

// liveOwned counts conv's tabs that are open or being opened; closed tabs
// (which stay in byID for tab_closed) do not count; r.mu must be held.
func (r *registry) liveOwned(conv consent.ConversationID) int {
	n := r.pending[conv]
	for _, t := range r.byID {
		if !t.closed && t.conv == conv {
			n++
		}
	}
	return n
}

func (r *registry) ownedTargets() []proto.TargetTargetID {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []proto.TargetTargetID
	for _, t := range r.byID {
		if !t.closed && t.conv != "" {
			out = append(out, t.target)
		}
	}
	return out
}

// lookup returns the live tab id owned by conv.
func (r *registry) lookup(conv consent.ConversationID, id consent.TabID) (*tab, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.byID[id]
	switch {
	case t == nil || t.closed:
		return nil, consent.Errorf(consent.CodeTabClosed, consent.NextListTabs, "tab %s is closed", id)
	case t.conv != conv:
		return nil, consent.Errorf(consent.CodeWrongConversation, consent.NextListTabs, "tab %s belongs to another conversation or to the operator", id)
	}
	return t, nil
}

// httpish reports whether a popup may keep this URL: the web, or the blank
// page a popup starts on.
func httpish(raw string) bool {
	if raw == "" || raw == "about:blank" {
		return true
	}
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https")
}

// onTargetInfo runs on the event loop: state only, Chromium calls go to
// spawned goroutines.
func (b *Browser) onTargetInfo(info *proto.TargetTargetInfo, created bool) {
	if info.Type != proto.TargetTargetInfoTypePage {
		return
	}
	var report []consent.TabInfo
	var closePopup, attachPopup *tab
	r := &b.reg
	r.mu.Lock()
	t := r.byTarget[info.TargetID]
	switch {
	case t != nil:
		t.url, t.title = info.URL, info.Title
		if t.popup && !httpish(info.URL) && !isErrorPage(info.URL) {
			closePopup = t
		} else {
			report = append(report, t.info())
		}
	case r.unclaimed[info.TargetID].TargetID != "":
		r.unclaimed[info.TargetID] = *info
	default:
		if op := r.byTarget[info.OpenerID]; info.OpenerID != "" && op != nil && op.conv != "" && !op.closed {
			// A popup of a task tab: same conversation, own navigation
			// scope (no grant is inherited; the hook asks afresh).
			t = r.add(*info, op.conv, op.id)
			if !httpish(info.URL) {
				closePopup = t
			} else if r.liveOwned(op.conv) > b.opts.TabLimit {
				closePopup = t
			} else {
				report = append(report, t.info())
				attachPopup = t
			}
		} else if r.creating > 0 {
			r.unclaimed[info.TargetID] = *info
		} else {
			report = append(report, r.add(*info, "", "").info())
		}
	}
	r.mu.Unlock()
	_ = created
	for _, ti := range report {
		b.gate.PutTab(ti)
	}
	if closePopup != nil {
		b.closePopup(closePopup, info.URL)
	}
	if attachPopup != nil {
		// A popup's load is followed like a NewTab's: only a registry
		// session carries the lifecycle events that end "loading". Its
		// first request waits in the hook for consent meanwhile.
		b.spawn(func() {
			ctx, cancel := b.call(nil)
			defer cancel()
			if _, err := b.attach(ctx, attachPopup); err != nil {
				b.log.Debug("attach to popup", "err", err)
			}
		})
	}
}

func isErrorPage(u string) bool { return len(u) >= 13 && u[:13] == "chrome-error:" }

// closePopup closes a popup the conversation may not keep and says why in
// the activity log.
func (b *Browser) closePopup(t *tab, where string) {
	reason := "a popup to a non-HTTP(S) address"
	if httpish(where) {
		reason = fmt.Sprintf("a popup beyond the tab limit (%d)", b.opts.TabLimit)
	}
	b.gate.Note(t.conv, fmt.Sprintf("closed %s opened by %s", reason, t.opener), true)
	target := t.target
	b.spawn(func() {
		ctx, cancel := b.call(nil)
		defer cancel()
		_, _ = proto.TargetCloseTarget{TargetID: target}.Call(b.rod().Context(ctx))
	})
}

func (b *Browser) onTargetDestroyed(id proto.TargetTargetID) {
	r := &b.reg
	r.mu.Lock()
	delete(r.unclaimed, id)
	t := r.byTarget[id]
	if t != nil {
		t.closed = true
		delete(r.byTarget, id)
		delete(r.bySess, t.session)
		for sid, target := range r.guarded {
			if target == id {
				delete(r.guarded, sid)
			}
		}
		close(t.lifeCh) // wakes a Navigate waiting for this tab's load
		t.lifeCh = make(chan struct{})
	}
	var h *Handle
	if t != nil {
		h = t.handle
	}
	r.mu.Unlock()
	if h != nil {
		b.endHandles([]*Handle{h})
	}
	if t != nil {
		b.gate.RemoveTab(t.id)
	}
}

// NewTab opens an about:blank tab owned by conv. background keeps the
// operator's current tab in front. Errors: missing_session, paused,
// tab_limit, browser_unavailable, browser_operation_failed.
func (b *Browser) NewTab(ctx context.Context, conv consent.ConversationID, background bool) (consent.TabID, error) {
	if err := b.alive(); err != nil {
		return "", err
	}
	if conv == "" {
		return "", consent.Errorf(consent.CodeMissingSession, consent.NextNone, "no conversation")
	}
	if b.gate.Paused(conv) {
		return "", errPaused()
	}
	r := &b.reg
	r.mu.Lock()
	if r.liveOwned(conv) >= b.opts.TabLimit {
		r.mu.Unlock()
		return "", consent.Errorf(consent.CodeTabLimit, consent.NextListTabs, "this conversation already has %d tabs open; close one first", b.opts.TabLimit)
	}
	r.creating++
	r.pending[conv]++
	r.mu.Unlock()

	cctx, cancel := b.call(ctx)
	defer cancel()
	res, err := proto.TargetCreateTarget{URL: "about:blank", Background: background}.Call(b.rod().Context(cctx))

	r.mu.Lock()
	r.creating--
	if r.pending[conv]--; r.pending[conv] <= 0 {
		delete(r.pending, conv)
	}
	var t *tab
	if err == nil {
		t = r.byTarget[res.TargetID] // closed already by someone else?
		if t == nil {
			info, ok := r.unclaimed[res.TargetID]
			delete(r.unclaimed, res.TargetID)
			if !ok {
				info = proto.TargetTargetInfo{TargetID: res.TargetID, Type: proto.TargetTargetInfoTypePage, URL: "about:blank"}
			}
			t = r.add(info, conv, "")
		}
	}
	swept := r.sweep()
	var ti consent.TabInfo
	if t != nil {
		ti = t.info()
	}
	r.mu.Unlock()
	for _, s := range swept {
		b.gate.PutTab(s)
	}
	if err != nil {
		return "", b.opFailed("open a tab", err)
	}
	b.gate.PutTab(ti)
	// The attach (three calls) gets a budget of its own: creating the
	// target may have used most of cctx's, which bounds one call.
	actx, acancel := b.call(ctx)
	defer acancel()
	if _, err := b.attach(actx, t); err != nil {
		// The caller never learns this tab's id: close it rather than leave
		// a blank tab counting against the conversation's tab_limit.
		b.closeTarget(t)
		return "", b.opFailed("attach to the new tab", err)
	}
	return t.id, nil
}

// closeTarget closes t's target and marks it closed at once, whoever owns
// it; the callers have checked that they may.
func (b *Browser) closeTarget(t *tab) {
	b.reg.mu.Lock()
	target := t.target
	b.reg.mu.Unlock()
	ctx, cancel := b.call(nil)
	defer cancel()
	if _, err := (proto.TargetCloseTarget{TargetID: target}).Call(b.rod().Context(ctx)); err != nil {
		b.log.Debug("close target", "target", string(target), "err", err)
	}
	b.confirmClosed(target)
	b.onTargetDestroyed(target)
}

// Closing a target can be lost: Target.closeTarget answers success, yet a
// page whose navigation just failed (a denied open: the error page is
// committing in another renderer) stays open. confirmClosed checks in the
// background that the target is gone and closes it again until it is.
const (
	closeRetries = 10
	closeRecheck = 300 * time.Millisecond
)

func (b *Browser) confirmClosed(target proto.TargetTargetID) {
	b.spawn(func() {
		for range closeRetries {
			select {
			case <-time.After(closeRecheck):
			case <-b.ctx.Done():
				return
			}
			ctx, cancel := b.call(nil)
			_, err := proto.TargetGetTargetInfo{TargetID: target}.Call(b.rod().Context(ctx))
			if err == nil {
				_, err = proto.TargetCloseTarget{TargetID: target}.Call(b.rod().Context(ctx))
				cancel()
				continue
			}
			cancel()
			return // gone (or the browser is; a relaunch starts afresh)
		}
		b.log.Warn("a closed tab is still open in Chromium", "target", string(target))
	})
}

// session returns the tab's flat CDP session, attaching on first use.
func (b *Browser) session(ctx context.Context, t *tab) (proto.TargetSessionID, error) {
	b.reg.mu.Lock()
	sid, target := t.session, t.target
	b.reg.mu.Unlock()
	if sid != "" {
		return sid, nil
	}
	res, err := proto.TargetAttachToTarget{TargetID: target, Flatten: true}.Call(b.rod().Context(ctx))
	if err != nil {
		return "", err
	}
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	if t.session != "" {
		// Lost a race with another attach; keep the first session and let
		// the extra one go.
		extra := res.SessionID
		b.spawn(func() {
			c, cancel := b.call(nil)
			defer cancel()
			_ = proto.TargetDetachFromTarget{SessionID: extra}.Call(b.rod().Context(c))
		})
		return t.session, nil
	}
	t.session = res.SessionID
	b.reg.bySess[res.SessionID] = t
	return t.session, nil
}

// attach returns the tab's session with the Page domain and lifecycle
// events on, which Navigate needs to wait for a load.
func (b *Browser) attach(ctx context.Context, t *tab) (proto.TargetSessionID, error) {
	b.reg.mu.Lock()
	had := t.session != ""
	b.reg.mu.Unlock()
	sid, err := b.session(ctx, t)
	if err != nil || had {
		return sid, err
	}
	c := client{b: b, sid: sid, ctx: ctx}
	if err := (proto.PageEnable{}).Call(c); err != nil {
		return "", err
	}
	return sid, proto.PageSetLifecycleEventsEnabled{Enabled: true}.Call(c)
}

// onLifecycle runs on the event loop.
func (b *Browser) onLifecycle(sid proto.TargetSessionID, e *proto.PageLifecycleEvent) {
	b.reg.mu.Lock()
	t := b.reg.bySess[sid]
	if t == nil || proto.TargetTargetID(e.FrameID) != t.target {
		b.reg.mu.Unlock()
		return
	}
	if e.LoaderID != t.loader {
		t.loader = e.LoaderID
		t.lifecycle = map[proto.PageLifecycleEventName]bool{}
	}
	t.lifecycle[e.Name] = true
	t.loading = !t.lifecycle[proto.PageLifecycleEventNameLoad]
	close(t.lifeCh)
	t.lifeCh = make(chan struct{})
	info := t.info()
	b.reg.mu.Unlock()
	if e.Name == proto.PageLifecycleEventNameInit || e.Name == proto.PageLifecycleEventNameLoad {
		b.gate.PutTab(info)
	}
	if e.Name == proto.PageLifecycleEventNameDOMContentLoaded || e.Name == proto.PageLifecycleEventNameLoad {
		// Chromium does not report a title set by the document through
		// Target.targetInfoChanged; read it once the document is parsed
		// and again when it has loaded.
		target := t.target
		b.spawn(func() { b.refreshInfo(target) })
	}
}

// refreshInfo re-reads a page target's URL and title.
func (b *Browser) refreshInfo(target proto.TargetTargetID) {
	ctx, cancel := b.call(nil)
	res, err := proto.TargetGetTargetInfo{TargetID: target}.Call(b.rod().Context(ctx))
	cancel()
	if err != nil || res.TargetInfo == nil {
		return
	}
	b.onTargetInfo(res.TargetInfo, false)
}

// waitLoad waits for the load event of loader's document, at most
// loadWait: a page that never finishes loading is still a committed page.
func (b *Browser) waitLoad(ctx context.Context, t *tab, loader proto.NetworkLoaderID) {
	limit := time.NewTimer(loadWait)
	defer limit.Stop()
	b.reg.mu.Lock()
	navs := t.navs
	b.reg.mu.Unlock()
	for {
		b.reg.mu.Lock()
		done := t.closed || t.navs != navs || (t.loader == loader && t.lifecycle[proto.PageLifecycleEventNameLoad])
		ch := t.lifeCh
		b.reg.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-limit.C:
			return
		case <-ctx.Done():
			return
		case <-b.ctx.Done():
			return
		}
	}
}

// client is a proto.Client bound to a tab's session.
type client struct {
	b   *Browser
	sid proto.TargetSessionID
	ctx context.Context
}

func (c client) Call(ctx context.Context, _ string, method string, params any) ([]byte, error) {
	return c.b.rod().Call(ctx, string(c.sid), method, params)
}
func (c client) GetContext() context.Context         { return c.ctx }
func (c client) GetSessionID() proto.TargetSessionID { return c.sid }

func (b *Browser) opFailed(what string, err error) error {
	if e := b.alive(); e != nil {
		return e
	}
	return consent.Errorf(consent.CodeBrowserOperationFailed, consent.NextNone, "%s: %v", what, err)
}

// Navigate loads rawURL in tab. The request hook asks navigation consent
// for the origin (and for each cross-origin redirect hop); ctx should be
// the operation's context, since a review may be waiting for the operator.
// A refusal comes back as the consent or policy error (user_denied,
// timeout, website_blocked…) and leaves the tab on about:blank.
func (b *Browser) Navigate(ctx context.Context, conv consent.ConversationID, id consent.TabID, rawURL string) error {
	if err := b.alive(); err != nil {
		return err
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return consent.Errorf(consent.CodeInvalidURL, consent.NextNone, "only http and https URLs can be opened")
	}
	t, sid, err := b.agentNav(conv, id)
	if err != nil {
		return err
	}
	defer b.agentNavDone(t)
	b.reg.mu.Lock()
	sent := t.sent
	b.reg.mu.Unlock()
	nctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(b.ctx, stop)()
	res, err := proto.PageNavigate{URL: u.String()}.Call(client{b: b, sid: sid, ctx: nctx})
	if derr := b.navEnded(t); derr != nil {
		if b.isDenial(t, derr) {
			return derr
		}
		// Closed under the call (a crash kills every tab): the request
		// may already have reached the site.
		return b.reached(t, sent, derr)
	}
	switch {
	case err != nil:
		return b.reached(t, sent, b.opFailed("navigate", err))
	case res.ErrorText != "":
		err := b.opFailed("navigate", fmt.Errorf("%s", res.ErrorText))
		if neverSent(res.ErrorText) {
			return err
		}
		return b.reached(t, sent, err)
	}
	if res.LoaderID != "" {
		b.waitLoad(ctx, t, res.LoaderID)
	}
	return nil
}

// reached marks err dispatched when the hook let a main-frame request of t
// go to the site since sent was read: a navigation that fails after that
// (Chromium killed, the op cancelled, the connection reset) may have
// changed state on the site, and the agent must not read it as
// "nothing happened" (DESIGN §5 uncertain outcomes).
func (b *Browser) reached(t *tab, sent uint64, err error) error {
	b.reg.mu.Lock()
	moved := t.sent != sent
	b.reg.mu.Unlock()
	var ce *consent.Error
	if !moved || !errors.As(err, &ce) {
		return err
	}
	out := *ce
	out.Dispatched, out.MayHaveChangedState = true, true
	out.Next = consent.NextObserveBeforeRetry
	out.Message += " (the request may have reached the site)"
	return &out
}

// isDenial reports whether err is the hook's refusal of t's main-frame
// request (consent or policy): then nothing went to the site.
func (b *Browser) isDenial(t *tab, err error) bool {
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	return t.denial != nil && err == t.denial
}

// neverSent reports the Chromium net errors of a request that never
// reached a server (no connection was made).
func neverSent(errorText string) bool {
	for _, e := range []string{"ERR_NAME_NOT_RESOLVED", "ERR_CONNECTION_REFUSED", "ERR_ADDRESS_UNREACHABLE",
		"ERR_ADDRESS_INVALID", "ERR_CONNECTION_TIMED_OUT", "ERR_UNSAFE_PORT", "ERR_INVALID_URL", "ERR_BLOCKED_BY_CLIENT"} {
		if strings.Contains(errorText, e) {
			return true
		}
	}
	return false
}

// CloseTab closes a tab owned by conv.
func (b *Browser) CloseTab(ctx context.Context, conv consent.ConversationID, id consent.TabID) error {
	t, err := b.reg.lookup(conv, id)
	if err != nil {
		return err
	}
	cctx, cancel := b.call(ctx)
	defer cancel()
	if _, err := (proto.TargetCloseTarget{TargetID: t.target}).Call(b.rod().Context(cctx)); err != nil {
		return b.opFailed("close the tab", err)
	}
	b.confirmClosed(t.target)
	// Chromium's targetDestroyed event comes later; until it does the tab
	// must already be closed for every caller, so a use right after close
	// is tab_closed rather than a dead CDP session. The event's second
	// pass finds nothing left to do.
	b.onTargetDestroyed(t.target)
	return nil
}

// Tabs lists the live tabs: conv's own when conv is not empty, else all
// (operator tabs included), in creation order.
func (b *Browser) Tabs(conv consent.ConversationID) []consent.TabInfo {
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	var ts []*tab
	for _, t := range b.reg.byID {
		if !t.closed && (conv == "" || t.conv == conv) {
			ts = append(ts, t)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].seq < ts[j].seq })
	out := make([]consent.TabInfo, len(ts))
	for i, t := range ts {
		out[i] = t.info()
	}
	return out
}

// Tab returns one tab as last reported, tab_closed when it is gone.
func (b *Browser) Tab(id consent.TabID) (consent.TabInfo, error) {
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	t := b.reg.byID[id]
	if t == nil || t.closed {
		return consent.TabInfo{}, consent.Errorf(consent.CodeTabClosed, consent.NextListTabs, "tab %s is closed", id)
	}
	return t.info(), nil
}

// onConsentEvent runs on the engine's delivery path and must not block.
func (b *Browser) onConsentEvent(e consent.Event) {
	b.onHandleEvent(e)
	if e.Kind == consent.EventTakeOver {
		conv := e.Conversation
		b.cancelHeld(conv)
		b.spawn(func() { b.takeOver(conv) })
		return
	}
	if e.Kind == consent.EventCloseTabs {
		b.closeEnded(e.Tabs)
		return
	}
	if e.Kind != consent.EventSelect || e.Tab == "" {
		return
	}
	b.reg.mu.Lock()
	b.reg.front = e.Tab
	b.reg.mu.Unlock()
	select {
	case b.activate <- struct{}{}:
	default: // a wake-up is pending; it will read the newest front
	}
}

// closeEnded closes the tabs of a conversation whose grace is over
// (consent.EventCloseTabs). Only tabs a conversation owned are closed: the
// engine names tabs by id, and an operator's own tab is never one of them.
func (b *Browser) closeEnded(ids []consent.TabID) {
	var ts []*tab
	b.reg.mu.Lock()
	for _, id := range ids {
		if t := b.reg.byID[id]; t != nil && !t.closed && t.conv != "" {
			ts = append(ts, t)
		}
	}
	b.reg.mu.Unlock()
	if len(ts) == 0 {
		return
	}
	b.spawn(func() {
		for _, t := range ts {
			b.closeTarget(t)
		}
	})
}

// activationWorker brings the selected tab to front. Selections coalesce:
// only the newest matters to the operator.
func (b *Browser) activationWorker() {
	defer b.wg.Done()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-b.activate:
		}
		b.reg.mu.Lock()
		t := b.reg.byID[b.reg.front]
		var target proto.TargetTargetID
		if t != nil && !t.closed {
			target = t.target
		}
		b.reg.mu.Unlock()
		if target == "" {
			continue
		}
		ctx, cancel := b.call(nil)
		if err := (proto.TargetActivateTarget{TargetID: target}).Call(b.rod().Context(ctx)); err != nil {
			b.log.Warn("bring tab to front", "target", string(target), "err", err)
		}
		cancel()
	}
}

// Page returns a rod page bound to tab's CDP session for the observe/act
// layer (browser/dom), which speaks typed protocol calls through it. It is
// only a client: the tab stays in this registry's hands (ownership, close,
// the hook), and the page becomes useless once the tab closes.
func (b *Browser) Page(ctx context.Context, conv consent.ConversationID, id consent.TabID) (*rod.Page, error) {
	if err := b.alive(); err != nil {
		return nil, err
	}
	t, err := b.reg.lookup(conv, id)
	if err != nil {
		return nil, err
	}
	b.reg.mu.Lock()
	target := t.target
	b.reg.mu.Unlock()
	// rod caches the page per target. Its own session is separate from the
	// registry's; its event goroutine ends with the deadline here or with
	// Close, and callers set their own context per call (Page.Context).
	cctx, cancel := b.call(ctx)
	defer cancel()
	p, err := b.rod().Context(cctx).PageFromTarget(target)
	if err != nil {
		return nil, b.opFailed("attach to the tab", err)
	}
	return p, nil
}
