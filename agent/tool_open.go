package agent

import (
	"context"
	"errors"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// openTool is browser_open (design.md §5).
var openTool = NewTool(ToolSpec{
	Name:  "browser_open",
	Title: "Open a URL in a tab",
	Description: "Open an http(s) URL in a new tab (or in one of your tabs with tabId). The person approves each new origin for the tab before any request reaches it, so this may wait for their decision." +
		" A success only means the page loaded: call browser_observe next before doing anything on it." + descUncertain,
}, (*Dispatcher).open)

// OpenArgs are browser_open's arguments (the input schema is inferred from them; the jsonschema tags are what the model reads).
type OpenArgs struct {
	URL        string `json:"url" jsonschema:"absolute http(s) URL to open; the operator approves each new origin"`
	TabID      string `json:"tabId,omitempty" jsonschema:"reuse this owned tab instead of opening a new one"`
	Background bool   `json:"background,omitempty" jsonschema:"open without bringing the tab to front; a review for it still comes on screen (its tab raised) as soon as no other review is showing"`
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
	// The op's own context may already be done (take-over, cancel,
	// deadline): the close gets its own deadline.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cdpedge.Release)
	defer cancel()
	if err := d.browser.CloseTab(cctx, conv, tab); err != nil && errcode.Of(err) != errcode.TabClosed {
		d.engine.Note(conv, "could not close the tab of a failed open ("+string(tab)+"): "+string(errcode.Of(err)), true)
	}
	return fail(cause)
}

// attachSiteTools attaches a new tab's site tools before its first
// navigation, so the polyfill is there for the first document.
func (d *Dispatcher) attachSiteTools(ctx context.Context, conv consent.ConversationID, tab consent.TabID) error {
	h, err := d.browser.Handle(ctx, conv, tab)
	if err != nil {
		return err
	}
	return h.AttachSiteTools(ctx)
}
