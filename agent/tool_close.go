package agent

import (
	"context"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// closeTool is browser_close (design.md §5).
var closeTool = NewTool(ToolSpec{
	Name:  "browser_close",
	Title: "Close a tab",
	Description: "Close one of your tabs when you are done with it. The person is not asked: closing loads nothing new." +
		" Returns closed:true; afterwards every call on that tabId fails tab_closed. A conversation may keep only a few tabs open at once (tab_limit): close the ones you no longer need.",
}, (*Dispatcher).closeTab)

// closeTab is browser_close: the conversation closes one of its own tabs.
// It asks for no review: closing a tab sends nothing to any website (the
// page's unload handlers are not a step the operator approves, no more
// than the tab's own navigation away is), and the operator sees the tab
// leave the inventory. It is still one op on the tab (busy while another
// runs, paused during a take-over, so the agent cannot close the page the
// person has taken over) and is audited like every call.
func (d *Dispatcher) closeTab(ctx context.Context, conv consent.ConversationID, a CloseArgs) (Result, consent.TabID) {
	if a.TabID == "" {
		return fail(errcode.Errorf(errcode.InvalidAction, errcode.NextListTabs, "tabId is required: name the tab to close (see browser_tabs)")), ""
	}
	tab := consent.TabID(a.TabID)
	owner, known := d.engine.Owner(tab)
	switch {
	case !known:
		return fail(errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "tab %s is closed", tab)), tab
	case owner != conv:
		return fail(errcode.Errorf(errcode.WrongConversation, errcode.NextListTabs, "that tab belongs to another conversation or to the operator")), tab
	}
	op, err := d.engine.Begin(ctx, conv, tab, "close")
	if err != nil {
		return fail(err), tab
	}
	defer op.End()
	if err := d.browser.CloseTab(op.Context(), conv, tab); err != nil {
		return fail(opErr(op, err)), tab
	}
	return ok(map[string]any{"tabId": string(tab), "closed": true}), tab
}

// CloseArgs are browser_close's arguments (the input schema is inferred from them; the jsonschema tags are what the model reads).
type CloseArgs struct {
	TabID string `json:"tabId" jsonschema:"the owned tab to close"`
}
