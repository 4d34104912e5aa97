package agent

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// callSiteToolTool is webmcp_call_tool (design.md §5). It runs through the
// gates: read → (validate input) → "Allow once" → invoke → "Share result"
// → deliver. A result that is not shared never leaves this file: not in
// the envelope, the audit log or any log line. The tab's site-tools
// session is its handle's (browser).
var callSiteToolTool = NewTool(ToolSpec{
	Name:  "webmcp_call_tool",
	Title: "Call a site tool",
	Description: "Call one site tool from webmcp_list_tools with an input object matching its inputSchema. The person allows each call, then decides whether its result is shared with you; a result they do not share fails result_withheld (the tool did run)." +
		" The outcome callback_returned_verify_outcome means the site answered: observe or verify the page to confirm the effect." + descUncertain + descTabID + descUntrusted,
}, (*Dispatcher).callSiteTool)

func (d *Dispatcher) callSiteTool(ctx context.Context, conv consent.ConversationID, a CallToolArgs) (Result, consent.TabID) {
	if a.ToolID == "" {
		return fail(errcode.Errorf(errcode.StaleTool, errcode.NextObserve, "toolId is required: call webmcp_list_tools first")), ""
	}
	p, res, tab := d.beginPage(ctx, conv, a.TabID, "site tool")
	if p == nil {
		return res, tab
	}
	defer p.op.End()
	input := a.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	call, err := p.dt.PrepareSiteTool(p.op.Context(), a.ToolID, input)
	if err != nil {
		return fail(opErr(p.op, err)), tab
	}
	pass, err := d.engine.AskGrant(p.op.Context(), consent.Request{
		Gate: consent.GateAction, Conversation: conv, Tab: tab, Origin: p.origin,
		ToolCall: call.ToolCall(), Recheck: call.Fresh,
	})
	if err != nil {
		return fail(opErr(p.op, err)), tab
	}
	result, err := call.Invoke(p.op.Context())
	if err != nil {
		return fail(uncertain(opErr(p.op, err))), tab
	}
	if err := d.engine.Ask(p.op.Context(), consent.Request{
		Gate: consent.GateDisclosure, Conversation: conv, Tab: tab, Origin: p.origin,
		Disclosure: call.Disclosure(result),
	}); err != nil {
		return fail(withheld(err)), tab
	}
	return ok(withGrant(map[string]any{
		"outcome": "callback_returned_verify_outcome",
		"result":  result,
		"trust":   TrustUntrusted,
	}, pass)), tab
}

// uncertain marks a failure after the tool was invoked: the site may have
// acted, so the agent must observe rather than repeat.
func uncertain(err error) error {
	var ce *errcode.Error
	if !errors.As(err, &ce) {
		ce = &errcode.Error{Code: errcode.BrowserOperationFailed, Message: err.Error()}
	}
	out := *ce
	if out.Code == errcode.TooManyRequests || out.Code == errcode.StaleTool || out.Code == errcode.InvalidInput {
		return &out // refused before anything reached the page
	}
	out.Dispatched, out.MayHaveChangedState = true, true
	out.Next = errcode.NextObserveBeforeRetry
	return &out
}

// withheld is every failed disclosure: denied, cancelled or timed out, the
// callback ran and its result stays with the console (design.md §4).
func withheld(err error) error {
	why := "the operator did not share the result"
	if errcode.Of(err) == errcode.DisclosureTimeout || errcode.Of(err) == errcode.Timeout {
		why = "the share review timed out"
	}
	return &errcode.Error{
		Code:                errcode.ResultWithheld,
		Message:             why + "; the site tool ran — do not repeat it, observe the page instead",
		Dispatched:          true,
		MayHaveChangedState: true,
		Next:                errcode.NextObserve,
	}
}

// CallToolArgs are webmcp_call_tool's arguments (the input schema is inferred from them; the jsonschema tags are what the model reads).
type CallToolArgs struct {
	TabID  string          `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	ToolID string          `json:"toolId" jsonschema:"toolId from webmcp_list_tools"`
	Input  json.RawMessage `json:"input,omitempty" jsonschema:"input object matching the tool's inputSchema"`
}
