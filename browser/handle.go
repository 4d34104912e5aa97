package browser

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
	"github.com/tabwarden/tabwarden/browser/dom"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/webmcp"
)

// Handle is one task tab as an agent uses it: the tab-level verbs
// (observe, prepare and dispatch an act or an upload, verify, the
// viewport, site tools) and nothing of CDP. It owns the tab's CDP session
// for those verbs, its observation state (dom.Tab) and its site-tools
// session (webmcp.Site, under the Browser's broker). The Browser makes it
// on first use (Browser.Handle) and ends it itself: when the tab closes,
// when Chromium dies (crash or relaunch) and when the Browser closes. A
// take-over, resume or cancel of its conversation expires its
// observations, and take-over and cancel stop its running site-tool calls.
// After its end every verb fails tab_closed.
//
// A client learns what became of the tab from the handle itself: Done and
// End say that and why it ended, TakeOvers counts the person's take-overs
// of its conversation; a Slot keeps the client's own state of the tab on
// the handle, so that state goes with the tab.
type Handle struct {
	b    *Browser
	id   consent.TabID
	conv consent.ConversationID
	page *rod.Page
	dom  *dom.Tab

	attach    sync.Mutex // serializes AttachSiteTools
	mu        sync.Mutex // guards site, closed and slots
	site      *webmcp.Site
	closed    bool
	slots     map[any]any // Slot values, by slot
	end       atomic.Uint32
	takeOvers atomic.Uint64
	done      chan struct{} // closed with the handle
	endNow    context.CancelFunc
	released  sync.Once
	life      context.Context // ends with the handle; the site lives under it
	cancel    context.CancelFunc
}

// EndReason is why the browser ended a handle.
type EndReason uint32

const (
	// NotEnded: the handle has not ended.
	NotEnded EndReason = iota
	// EndTabClosed: the tab closed — by the agent, the operator, the page
	// itself (window.close) or the end of its conversation's grace.
	EndTabClosed
	// EndBrowserLost: Chromium died (crash, quit) or the attached browser
	// went away, and every tab with it; a relaunch follows for a launched
	// Chromium, and the tab is not in it.
	EndBrowserLost
	// EndBrowserClosed: the console closed the Browser.
	EndBrowserClosed
)

func (r EndReason) String() string {
	switch r {
	case NotEnded:
		return "not ended"
	case EndTabClosed:
		return "tab closed"
	case EndBrowserLost:
		return "browser lost"
	case EndBrowserClosed:
		return "browser closed"
	}
	return "unknown"
}

// Handle returns the handle of tab id, which conv must own: tab_closed
// when it is gone, wrong_conversation when another conversation or the
// operator owns it, browser_unavailable after a crash.
func (b *Browser) Handle(ctx context.Context, conv consent.ConversationID, id consent.TabID) (*Handle, error) {
	if err := b.alive(); err != nil {
		return nil, err
	}
	t, err := b.reg.lookup(conv, id)
	if err != nil {
		return nil, err
	}
	b.reg.mu.Lock()
	h, target := t.handle, t.target
	b.reg.mu.Unlock()
	if h != nil {
		return h, nil
	}
	// rod caches the page per target. Its session is the handle's own,
	// separate from the registry's; callers bound every call themselves.
	cctx, cancel := b.call(ctx)
	defer cancel()
	p, err := b.rod().Context(cctx).PageFromTarget(target)
	if err != nil {
		return nil, b.opFailed("attach to the tab", err)
	}
	return b.adopt(t, p)
}

// adopt makes the handle of t over page p, unless t closed or has one.
func (b *Browser) adopt(t *tab, p *rod.Page) (*Handle, error) {
	b.reg.mu.Lock()
	id, conv := t.id, t.conv
	b.reg.mu.Unlock()
	life, end := context.WithCancel(b.ctx)
	// ended is done with the handle (close), before release ends life:
	// a call under way on the tab stops as soon as the tab is gone.
	ended, endNow := context.WithCancel(context.Background())
	h := &Handle{b: b, id: id, conv: conv, page: p, dom: dom.NewTab(p, string(id), dom.Options{Ended: ended}), done: make(chan struct{}), endNow: endNow, life: life, cancel: end}
	b.reg.mu.Lock()
	switch {
	case t.closed:
		b.reg.mu.Unlock()
		end()
		return nil, errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "tab %s is closed", id)
	case t.handle != nil: // another call made it first
		h = t.handle
		b.reg.mu.Unlock()
		end()
		return h, nil
	}
	t.handle = h
	b.reg.mu.Unlock()
	return h, nil
}

// ID is the tab's id.
func (h *Handle) ID() consent.TabID { return h.id }

// Conversation is the conversation that owns the tab.
func (h *Handle) Conversation() consent.ConversationID { return h.conv }

// Done is closed when the browser ends the handle; End says why.
func (h *Handle) Done() <-chan struct{} { return h.done }

// End is why the handle ended, NotEnded while it has not. The browser sets it
// before Done closes and before the engine hears that the tab is gone.
func (h *Handle) End() EndReason { return EndReason(h.end.Load()) }

// TakeOvers counts the person's take-overs of the handle's conversation
// while the handle was open. The browser counts one as it applies the
// take-over (its observations expire), before later engine events reach
// any listener.
func (h *Handle) TakeOvers() uint64 { return h.takeOvers.Load() }

// A Slot is a client's place for a value of its own on every handle: the
// browser keeps the value with the handle, drops it with the handle and
// never looks inside. The client reads End and TakeOvers to learn what
// became of the tab.
type Slot[T any] struct{ _ byte } // not zero-sized: each slot has its own address

// NewSlot returns a new slot.
func NewSlot[T any]() *Slot[T] { return new(Slot[T]) }

// Get is h's value in s; the first Get makes it with init (called without
// the handle's lock held).
func (s *Slot[T]) Get(h *Handle, init func() *T) *T {
	h.mu.Lock()
	v, ok := h.slots[s].(*T)
	h.mu.Unlock()
	if ok {
		return v
	}
	n := init()
	h.mu.Lock()
	defer h.mu.Unlock()
	if v, ok := h.slots[s].(*T); ok {
		return v
	}
	if h.slots == nil {
		h.slots = map[any]any{}
	}
	h.slots[s] = n
	return n
}

// live is nil while the handle's tab is open.
func (h *Handle) live() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "tab %s is closed", h.id)
	}
	return nil
}

// Observe reads the page (design.md §6).
func (h *Handle) Observe(ctx context.Context, req dom.ObserveRequest) (*dom.Observation, error) {
	if err := h.live(); err != nil {
		return nil, err
	}
	return h.dom.Observe(ctx, req)
}

// Prepare validates an act against an observation for its review; the
// Prepared's Dispatch sends it.
func (h *Handle) Prepare(ctx context.Context, obsID string, a dom.Action) (*dom.Prepared, error) {
	if err := h.live(); err != nil {
		return nil, err
	}
	return h.dom.Prepare(ctx, obsID, a)
}

// PrepareUpload validates an upload into the file input ref.
func (h *Handle) PrepareUpload(ctx context.Context, obsID, ref string) (*dom.PreparedUpload, error) {
	if err := h.live(); err != nil {
		return nil, err
	}
	return h.dom.PrepareUpload(ctx, obsID, ref)
}

// Verify checks one assertion against the page.
func (h *Handle) Verify(ctx context.Context, kind, value string) (dom.VerifyResult, error) {
	if err := h.live(); err != nil {
		return dom.VerifyResult{}, err
	}
	return h.dom.Verify(ctx, kind, value)
}

// Viewport is the page's layout viewport in CSS pixels (one CDP call, no
// page content).
type Viewport struct{ Width, Height float64 }

// Viewport reads the tab's layout viewport.
func (h *Handle) Viewport(ctx context.Context) (Viewport, error) {
	if err := h.live(); err != nil {
		return Viewport{}, err
	}
	c, cancel := context.WithTimeout(ctx, cdpedge.Call)
	defer cancel()
	m, err := proto.PageGetLayoutMetrics{}.Call(h.page.Context(c))
	if err != nil {
		if e := h.live(); e != nil {
			return Viewport{}, e
		}
		if e := h.b.alive(); e != nil {
			return Viewport{}, e
		}
		return Viewport{}, errcode.Errorf(errcode.BrowserOperationFailed, errcode.NextListTabs, "read the viewport: %v", err)
	}
	return Viewport{float64(m.CSSLayoutViewport.ClientWidth), float64(m.CSSLayoutViewport.ClientHeight)}, nil
}

// AttachSiteTools connects the tab's site tools once. Called right after
// a tab is made (before its first navigation, so the polyfill is in place
// for the first document); the site-tool verbs call it for tabs that
// appeared otherwise (popups).
func (h *Handle) AttachSiteTools(ctx context.Context) error {
	h.attach.Lock()
	defer h.attach.Unlock()
	h.mu.Lock()
	done := h.site != nil
	h.mu.Unlock()
	if err := h.live(); err != nil || done {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, cdpedge.SiteAttach)
	defer cancel()
	site, err := webmcp.Attach(actx, h.page.Context(h.life), h.b.opts.SiteToolMode)
	if err != nil {
		return err
	}
	h.mu.Lock()
	closed := h.closed
	if !closed {
		h.site = site
	}
	h.mu.Unlock()
	if closed {
		site.Close()
		return h.live()
	}
	h.b.sites.AddTab(h.conv, h.id, site)
	return nil
}

// ListSiteTools lists the tab's site tools (webmcp_list_tools).
func (h *Handle) ListSiteTools(ctx context.Context) (*webmcp.Listing, error) {
	if err := h.AttachSiteTools(ctx); err != nil {
		return nil, err
	}
	return h.b.sites.List(ctx, h.conv, h.id)
}

// PrepareSiteTool validates a call of a listed tool for its review.
func (h *Handle) PrepareSiteTool(ctx context.Context, toolID string, input json.RawMessage) (*webmcp.Call, error) {
	if err := h.live(); err != nil {
		return nil, err
	}
	return h.b.sites.Prepare(ctx, h.conv, h.id, toolID, input)
}

// expire makes every observation of the handle meaningless.
func (h *Handle) expire() { h.dom.Invalidate() }

// close ends the handle at once for reason (the first reason stands):
// every verb fails tab_closed from now on, its observations expire and
// Done closes. It makes no CDP call, so the event loop may call it;
// release does the rest.
func (h *Handle) close(reason EndReason) {
	h.mu.Lock()
	first := !h.closed
	if first {
		h.closed = true
		h.end.Store(uint32(reason))
	}
	h.mu.Unlock()
	h.dom.Invalidate()
	if first {
		close(h.done)
		h.endNow()
	}
}

// release stops the handle's site tools (running calls cancelled, the
// site's session closed) and ends its lifetime, ending the handle for
// reason unless it has ended. It makes CDP calls, each bounded;
// idempotent.
func (h *Handle) release(reason EndReason) {
	h.close(reason)
	h.released.Do(func() {
		h.mu.Lock()
		attached := h.site != nil
		h.mu.Unlock()
		if attached {
			h.b.sites.RemoveTab(h.id) // closes the site
		}
		h.cancel()
	})
}

// endHandles ends hs, whose tabs the registry has marked closed, for
// reason: at once, and their release on a goroutine of the Browser (Close
// releases every handle itself when the Browser is closing).
func (b *Browser) endHandles(hs []*Handle, reason EndReason) {
	for _, h := range hs {
		h.close(reason)
		b.spawn(func() { h.release(reason) })
	}
}

// releaseAll releases every handle the Browser made (Close).
func (b *Browser) releaseAll() {
	b.reg.mu.Lock()
	var hs []*Handle
	for _, t := range b.reg.byID {
		if t.handle != nil {
			hs = append(hs, t.handle)
		}
	}
	b.reg.mu.Unlock()
	for _, h := range hs {
		h.release(EndBrowserClosed)
	}
}

// conversationHandles is every live handle of conv.
func (b *Browser) conversationHandles(conv consent.ConversationID) []*Handle {
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	var out []*Handle
	for _, t := range b.reg.byID {
		if !t.closed && t.handle != nil && t.conv == conv {
			out = append(out, t.handle)
		}
	}
	return out
}

// onHandleEvent applies the engine's take-over, resume and cancel to conv's
// handles: their observations expire (the person may have done anything),
// and take-over and cancel stop their running site-tool calls (design.md §7).
// It runs on the engine's delivery path and does not block.
func (b *Browser) onHandleEvent(e consent.Event) {
	switch e.Kind {
	case consent.EventTakeOver, consent.EventCancel:
		b.sites.CancelConversation(e.Conversation)
	case consent.EventResume:
	default:
		return
	}
	for _, h := range b.conversationHandles(e.Conversation) {
		if e.Kind == consent.EventTakeOver {
			h.takeOvers.Add(1)
		}
		h.expire()
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
