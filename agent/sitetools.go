package agent

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/webmcp"
)

// siteTools attaches every task tab to the WebMCP broker and runs the two
// site-tool tools through the gates: read → (validate input) → "Allow once"
// → invoke → "Share result" → deliver. A result that is not shared never
// leaves this file: not in the envelope, the audit log or any log line.
type siteTools struct {
	broker *webmcp.Broker
	mode   webmcp.Mode

	mu    sync.Mutex
	sites map[consent.TabID]*attachedSite
	stop  func()
}

type attachedSite struct {
	conv   consent.ConversationID
	site   *webmcp.Site
	cancel context.CancelFunc
}

func newSiteTools(eng *consent.Engine, mode webmcp.Mode) *siteTools {
	st := &siteTools{broker: webmcp.NewBroker(webmcp.Options{}), mode: mode, sites: map[consent.TabID]*attachedSite{}}
	st.stop = eng.Listen(st.onEvent)
	return st
}

func (st *siteTools) onEvent(ev consent.Event) {
	switch ev.Kind {
	case consent.EventTakeOver, consent.EventCancel:
		// Take-over and cancel stop a running call in the page (DESIGN §7).
		st.broker.CancelConversation(ev.Conversation)
	case consent.EventTabRemoved:
		st.detach(ev.Tab)
	}
}

func (st *siteTools) detach(tab consent.TabID) {
	st.mu.Lock()
	a, ok := st.sites[tab]
	delete(st.sites, tab)
	st.mu.Unlock()
	if ok {
		st.broker.RemoveTab(tab)
		a.site.Close()
		a.cancel()
	}
}

func (st *siteTools) close() {
	st.stop()
	st.mu.Lock()
	tabs := make([]consent.TabID, 0, len(st.sites))
	for id := range st.sites {
		tabs = append(tabs, id)
	}
	st.mu.Unlock()
	for _, id := range tabs {
		st.detach(id)
	}
}

// ensure attaches tab once. It is called right after a tab is created
// (before its first navigation, so the polyfill is in place for the first
// document) and lazily for tabs that appeared otherwise (popups).
func (st *siteTools) ensure(ctx context.Context, b Browser, conv consent.ConversationID, tab consent.TabID) error {
	st.mu.Lock()
	a, ok := st.sites[tab]
	st.mu.Unlock()
	if ok && a.conv == conv {
		return nil
	}
	if ok {
		st.detach(tab)
	}
	page, err := b.Page(ctx, conv, tab)
	if err != nil {
		return err
	}
	// The site outlives this call: it follows the tab until the tab closes.
	life, cancel := context.WithCancel(context.Background())
	attachCtx, done := context.WithTimeout(ctx, 10*time.Second)
	defer done()
	site, err := webmcp.Attach(attachCtx, page.Context(life), st.mode)
	if err != nil {
		cancel()
		return err
	}
	st.mu.Lock()
	if _, raced := st.sites[tab]; raced {
		st.mu.Unlock()
		site.Close()
		cancel()
		return nil
	}
	st.sites[tab] = &attachedSite{conv: conv, site: site, cancel: cancel}
	st.mu.Unlock()
	st.broker.AddTab(conv, tab, site)
	return nil
}

func (d *Dispatcher) listSiteTools(ctx context.Context, conv consent.ConversationID, a ListToolsArgs) (Result, consent.TabID) {
	p, res, tab := d.beginPage(ctx, conv, a.TabID, "list site tools")
	if p == nil {
		return res, tab
	}
	defer p.op.End()
	if err := d.sites.ensure(p.op.Context(), d.browser, conv, tab); err != nil {
		return fail(opErr(p.op, err)), tab
	}
	listing, err := d.sites.broker.List(p.op.Context(), conv, tab)
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

func (d *Dispatcher) callSiteTool(ctx context.Context, conv consent.ConversationID, a CallToolArgs) (Result, consent.TabID) {
	if a.ToolID == "" {
		return fail(consent.Errorf(consent.CodeStaleTool, consent.NextObserve, "toolId is required: call webmcp_list_tools first")), ""
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
	call, err := d.sites.broker.Prepare(p.op.Context(), conv, tab, a.ToolID, input)
	if err != nil {
		return fail(opErr(p.op, err)), tab
	}
	if err := d.engine.Ask(p.op.Context(), consent.Request{
		Gate: consent.GateAction, Conversation: conv, Tab: tab, Origin: p.origin,
		ToolCall: call.ToolCall(), Recheck: call.Fresh,
	}); err != nil {
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
	return ok(map[string]any{
		"outcome": "callback_returned_verify_outcome",
		"result":  result,
		"trust":   TrustUntrusted,
	}), tab
}

// uncertain marks a failure after the tool was invoked: the site may have
// acted, so the agent must observe rather than repeat.
func uncertain(err error) error {
	var ce *consent.Error
	if !errors.As(err, &ce) {
		ce = &consent.Error{Code: consent.CodeBrowserOperationFailed, Message: err.Error()}
	}
	out := *ce
	if out.Code == consent.CodeTooManyRequests || out.Code == consent.CodeStaleTool || out.Code == consent.CodeInvalidInput {
		return &out // refused before anything reached the page
	}
	out.Dispatched, out.MayHaveChangedState = true, true
	out.Next = consent.NextObserveBeforeRetry
	return &out
}

// withheld is every failed disclosure: denied, cancelled or timed out, the
// callback ran and its result stays with the console (DESIGN §4).
func withheld(err error) error {
	why := "the operator did not share the result"
	if consent.CodeOf(err) == consent.CodeDisclosureTimeout || consent.CodeOf(err) == consent.CodeTimeout {
		why = "the share review timed out"
	}
	return &consent.Error{
		Code:                consent.CodeResultWithheld,
		Message:             why + "; the site tool ran — do not repeat it, observe the page instead",
		Dispatched:          true,
		MayHaveChangedState: true,
		Next:                consent.NextObserve,
	}
}
