package agent

import (
	"context"

	"github.com/tabwarden/tabwarden/consent"
)

// tabsTool is browser_tabs (design.md §5).
var tabsTool = NewTool(ToolSpec{
	Name:  "browser_tabs",
	Title: "List browser tabs",
	Description: "List the tabs of the supervised browser: your own tabs (tabId, url, title, visible, status, running operation, openerTabId for popups) and whether your conversation is paused by the person." +
		" Tabs opened by the person are listed but can never be used by you." +
		" Call this first, and again after tab_closed, wrong_conversation or missing_session." + descUntrusted,
	ReadOnly:  true,
	DuringJob: true,
}, (*Dispatcher).tabs)

// TabsArgs are browser_tabs's arguments: none.
type TabsArgs struct{}

func (d *Dispatcher) tabs(_ context.Context, conv consent.ConversationID, _ TabsArgs) (Result, consent.TabID) {
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
	return ok(map[string]any{"tabs": tabs, "paused": paused, "trust": TrustUntrusted}), ""
}
