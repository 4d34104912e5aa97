package agent

import (
	"context"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// navigateTool is browser_navigate (design.md §5).
var navigateTool = NewTool(ToolSpec{
	Name:  "browser_navigate",
	Title: "Navigate a tab",
	Description: "Load a URL in one of your tabs, or go back, forward or reload. A new origin needs the person's approval first." +
		" Every observation of the tab expires: call browser_observe next." + descTabID + descUncertain,
	Refine: refine(enum([]any{"back", "forward", "reload"}, "action")),
}, (*Dispatcher).navigate)

// NavigateArgs are browser_navigate's arguments (the input schema is inferred from them; the jsonschema tags are what the model reads).
type NavigateArgs struct {
	TabID  string `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	URL    string `json:"url,omitempty" jsonschema:"absolute http(s) URL; give url or action, not both"`
	Action string `json:"action,omitempty" jsonschema:"back, forward or reload"`
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
