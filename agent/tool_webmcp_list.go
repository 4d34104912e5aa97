package agent

import (
	"context"

	"github.com/tabwarden/tabwarden/consent"
)

// listSiteToolsTool is webmcp_list_tools (design.md §5).
var listSiteToolsTool = NewTool(ToolSpec{
	Name:  "webmcp_list_tools",
	Title: "List a page's site tools",
	Description: "List the tools the website in one of your tabs offers to agents (WebMCP): toolId, name, title, description, inputSchema, annotations, origin, and rejectedTools the console refused to expose." +
		" A toolId is bound to the current page: after navigation it goes stale (stale_tool); list again." +
		" Site annotations such as readOnlyHint are the website's claims, not guarantees." + descTabID + descUntrusted,
	ReadOnly: true,
}, (*Dispatcher).listSiteTools)

// ListToolsArgs are webmcp_list_tools's arguments (the input schema is inferred from them; the jsonschema tags are what the model reads).
type ListToolsArgs struct {
	TabID string `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
}

func (d *Dispatcher) listSiteTools(ctx context.Context, conv consent.ConversationID, a ListToolsArgs) (Result, consent.TabID) {
	p, res, tab := d.beginPage(ctx, conv, a.TabID, "list site tools")
	if p == nil {
		return res, tab
	}
	defer p.op.End()
	listing, err := p.dt.ListSiteTools(p.op.Context())
	if err != nil {
		return fail(opErr(p.op, err)), tab
	}
	return ok(map[string]any{
		"tools":         listing.Tools,
		"rejectedTools": listing.RejectedTools,
		"support":       listing.Support,
		"trust":         TrustUntrusted,
	}), tab
}
