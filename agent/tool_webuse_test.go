package agent_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/browser/browsertest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// countingBrowser counts every call into the browser: each path to a CDP
// call starts with one of these, so zero calls means nothing reached Chromium.
type countingBrowser struct {
	agent.Browser
	n atomic.Int64
}

func (c *countingBrowser) NewTab(ctx context.Context, conv consent.ConversationID, bg bool) (consent.TabID, error) {
	c.n.Add(1)
	return c.Browser.NewTab(ctx, conv, bg)
}

func (c *countingBrowser) Navigate(ctx context.Context, conv consent.ConversationID, id consent.TabID, u string) error {
	c.n.Add(1)
	return c.Browser.Navigate(ctx, conv, id, u)
}

func (c *countingBrowser) History(ctx context.Context, conv consent.ConversationID, id consent.TabID, a string) error {
	c.n.Add(1)
	return c.Browser.History(ctx, conv, id, a)
}

func (c *countingBrowser) Tab(id consent.TabID) (consent.TabInfo, error) {
	c.n.Add(1)
	return c.Browser.Tab(id)
}

func (c *countingBrowser) Handle(ctx context.Context, conv consent.ConversationID, id consent.TabID) (*browser.Handle, error) {
	c.n.Add(1)
	return c.Browser.Handle(ctx, conv, id)
}

// noBrowserCall runs a web_use call that must fail with code before any
// browser call, and returns its envelope.
func noBrowserCall(t *testing.T, e *e2e, cb *countingBrowser, conv consent.ConversationID, args map[string]any, code errcode.Code) map[string]any {
	t.Helper()
	before := cb.n.Load()
	r := e.callAs(conv, "web_use", args)
	if !r.IsError || r.Code() != string(code) {
		t.Fatalf("want %s, got %s", code, r.JSON())
	}
	if n := cb.n.Load() - before; n != 0 {
		t.Errorf("%s made %d browser calls before failing", code, n)
	}
	return roundTrip(t, r)
}

func pageToken(t *testing.T, e *e2e, tab string) string {
	t.Helper()
	got := wantOK(t, e.call("web_use", map[string]any{"command": "list_pages"}))
	for _, p := range got["pages"].([]any) {
		m := p.(map[string]any)
		if m["tab_id"] == tab {
			tok, _ := m["page_context_token"].(string)
			if tok == "" {
				t.Fatalf("page without token: %v", m)
			}
			return tok
		}
	}
	t.Fatalf("tab %s not listed: %v", tab, got)
	return ""
}

func TestE2EWebUseTokensSessionsAndRecovery(t *testing.T) {
	cb := &countingBrowser{}
	e := newE2E(t, func(c *agent.DispatcherConfig) { cb.Browser = c.Browser; c.Browser = cb })
	tab := e.open("/e2e/batch.html")
	e.observe(tab, true) // the read review, as in the default profile

	tok := pageToken(t, e, tab)
	obs := wantOK(t, e.call("web_use", map[string]any{"command": "observe", "page_context_token": tok}))
	ws, _ := obs["web_session_id"].(string)
	if ws == "" || obs["observationId"] == nil {
		t.Fatalf("observe with a token = %v", obs)
	}

	// Replay, foreign conversation: refused before any browser call.
	noBrowserCall(t, e, cb, e.conv, map[string]any{"command": "observe", "page_context_token": tok}, agent.CodePageContextConsumed)
	tok2 := pageToken(t, e, tab)
	other := e.otherConv("other")
	noBrowserCall(t, e, cb, other, map[string]any{"command": "observe", "page_context_token": tok2}, errcode.WrongConversation)
	noBrowserCall(t, e, cb, other, map[string]any{"command": "verify", "web_session_id": ws,
		"arguments": map[string]any{"assertion": "text_contains", "value": "Batch"}}, errcode.WrongConversation)

	// The same page reuses its session.
	again := wantOK(t, e.call("web_use", map[string]any{"command": "observe", "page_context_token": tok2}))
	if again["web_session_id"] != ws {
		t.Errorf("second observe of the page opened session %v, want %s", again["web_session_id"], ws)
	}
	v := wantOK(t, e.call("web_use", map[string]any{"command": "verify", "web_session_id": ws,
		"arguments": map[string]any{"assertion": "title_contains", "value": "Batch"}}))
	if v["verified"] != true {
		t.Errorf("verify = %v", v)
	}

	// Closed by the caller: forgotten, refused before any browser call.
	wantOK(t, e.call("web_use", map[string]any{"command": "close", "web_session_id": ws}))
	closed := noBrowserCall(t, e, cb, e.conv, map[string]any{"command": "observe", "web_session_id": ws}, agent.CodeWebSessionNotFound)
	if _, ok := closed["recovery_tab_id"]; ok {
		t.Errorf("a closed session offers recovery: %v", closed)
	}

	// Lost to a take-over: the next act is refused unsent, with recovery.
	obs = wantOK(t, e.call("web_use", map[string]any{"command": "observe", "page_context_token": pageToken(t, e, tab)}))
	ws = obs["web_session_id"].(string)
	send := refOf(t, obs["snapshot"].(string), "button", "Send")
	// Events reach listeners in order, so once this listener has the
	// resume, the dispatcher's has the take-over.
	resumed := make(chan struct{}, 1)
	stop := e.eng.Listen(func(ev consent.Event) {
		if ev.Kind == consent.EventResume && ev.Conversation == e.conv {
			resumed <- struct{}{}
		}
	})
	defer stop()
	if err := e.eng.TakeOver(e.conv); err != nil {
		t.Fatal(err)
	}
	if err := e.eng.Resume(e.conv); err != nil {
		t.Fatal(err)
	}
	select {
	case <-resumed:
	case <-e.ctx.Done():
		t.Fatal("no resume event")
	}
	lost := noBrowserCall(t, e, cb, e.conv, map[string]any{"command": "act", "web_session_id": ws,
		"arguments": map[string]any{"observationId": obs["observationId"], "action": map[string]any{"type": "click", "ref": send}}},
		agent.CodeWebSessionNotFound)
	if lost["recovery_tab_id"] != tab || lost["recovery_command"] != "observe" {
		t.Errorf("lost session failure = %v, want recovery to %s", lost, tab)
	}
	rec := wantOK(t, e.call("web_use", map[string]any{"command": "observe", "page_context_token": pageToken(t, e, tab)}))
	if rec["recovered_page"] != true || rec["previous_action_replayed"] != false {
		t.Errorf("recovered observation = %v", rec)
	}
	if n := len(batchRecords(e)); n != 0 {
		t.Errorf("the lost click reached the site %d times", n)
	}

	// A token of a page that navigated since list_pages is stale.
	tok3 := pageToken(t, e, tab)
	p := e.start("browser_navigate", map[string]any{"tabId": tab, "url": e.site.URL + "/e2e/batch.html?moved=1"})
	e.op.Approve(consent.KindNavigation, e.site.URL) // resume asks navigation consent again
	wantOK(t, p.result())
	noBrowserCall(t, e, cb, e.conv, map[string]any{"command": "observe", "page_context_token": tok3}, agent.CodePageContextStale)
}

func TestE2EWebUseTokenStaleAfterViewportChange(t *testing.T) {
	e := newE2E(t)
	tab := e.open("/e2e/batch.html")
	e.observe(tab, true)
	tok := pageToken(t, e, tab)
	restore, err := browsertest.EmulateViewport(e.ctx, e.br, e.conv, consent.TabID(tab), 500, 400)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	r := e.call("web_use", map[string]any{"command": "observe", "page_context_token": tok})
	if r.Code() != string(agent.CodePageContextStale) {
		t.Fatalf("observe after a viewport change = %s", r.JSON())
	}
	// A fresh listing carries the new geometry.
	wantOK(t, e.call("web_use", map[string]any{"command": "observe", "page_context_token": pageToken(t, e, tab)}))
}

func TestE2EWebUseActPassesTheSameGates(t *testing.T) {
	e := newE2E(t)
	tab := e.open("/e2e/batch.html")
	e.observe(tab, true)
	obs := wantOK(t, e.call("web_use", map[string]any{"command": "observe", "page_context_token": pageToken(t, e, tab)}))
	ws := obs["web_session_id"].(string)
	first := refOf(t, obs["snapshot"].(string), "textbox", "First")
	before := reviewsShown(e.conv, consent.KindAction)
	p := e.start("web_use", map[string]any{"command": "act", "web_session_id": ws,
		"arguments": map[string]any{"observationId": obs["observationId"], "action": map[string]any{"type": "fill", "ref": first, "text": "alpha"}}})
	e.op.Approve(consent.KindAction, e.site.URL)
	got := wantOK(t, p.result())
	if got["dispatched"] != true || got["web_session_id"] != ws {
		t.Errorf("act = %v", got)
	}
	if n := reviewsShown(e.conv, consent.KindAction) - before; n != 1 {
		t.Errorf("%d action reviews, want 1", n)
	}
	_, snap := e.observe(tab, false)
	if !strings.Contains(snap, `"First" value="alpha"`) {
		t.Errorf("the fill did not land:\n%s", snap)
	}
	// A token alone cannot act: the target must come from an observation
	// the caller has read, so it gets one and nothing is performed.
	res := wantOK(t, e.call("web_use", map[string]any{"command": "act", "page_context_token": pageToken(t, e, tab),
		"arguments": map[string]any{"observationId": "x", "action": map[string]any{"type": "click", "ref": first}}}))
	if res["action_performed"] != false || res["observationId"] == nil {
		t.Errorf("act with only a token = %v", res)
	}
}

func TestE2EWebUseOpenAndNavigateBehindTheNavigationGate(t *testing.T) {
	e := newE2E(t)
	p := e.start("web_use", map[string]any{"command": "open", "arguments": map[string]any{"url": e.site.URL + "/e2e/batch.html"}})
	e.op.Approve(consent.KindNavigation, e.site.URL)
	got := wantOK(t, p.result())
	tab, _ := got["opened_tab_id"].(string)
	pages, _ := got["pages"].([]any)
	if tab == "" || len(pages) != 1 || pages[0].(map[string]any)["page_context_token"] == nil {
		t.Fatalf("open = %v", got)
	}
	pr := e.start("web_use", map[string]any{"command": "observe", "page_context_token": pages[0].(map[string]any)["page_context_token"]})
	e.op.Approve(consent.KindRead, e.site.URL)
	ws := wantOK(t, pr.result())["web_session_id"]
	nav := wantOK(t, e.call("web_use", map[string]any{"command": "navigate", "web_session_id": ws,
		"arguments": map[string]any{"url": e.site.URL + "/form.html"}}))
	if nav["outcome"] != "navigation_finished" || !strings.HasSuffix(nav["url"].(string), "/form.html") {
		t.Errorf("navigate = %v", nav)
	}
	if e.site.Count("/form.html") != 1 {
		t.Errorf("the site saw /form.html %d times", e.site.Count("/form.html"))
	}
}

// A page that closes its own tab (window.close, after a click the person
// approved) ends its web_use session and its tokens at once: the browser
// ends the tab's handle, and web_use reads the end there. The next use of
// either is refused from memory, unsent, with no recovery offered: the
// page is gone for good, not lost to a crash or a take-over.
func TestE2EWebUseSessionEndsWhenThePageClosesItsTab(t *testing.T) {
	cb := &countingBrowser{}
	e := newE2E(t, func(c *agent.DispatcherConfig) { cb.Browser = c.Browser; c.Browser = cb })
	// A page may close only a tab a script opened: the page is a popup.
	opener := e.open("/popup.html?to=/e2e/close.html")
	oobs, osnap := e.observe(opener, true)
	po := e.start("browser_act", click(opener, oobs, refOf(t, osnap, "button", "Open popup")))
	e.op.Approve(consent.KindAction, e.site.URL)
	wantOK(t, po.result())
	r := e.op.AwaitQueued(consent.KindNavigation, e.site.URL)
	e.eng.Select(e.conv, r.Tab)
	e.op.Approve(consent.KindNavigation, e.site.URL)
	e.waitTab(r.Tab, "finished loading the page", func(ts consent.TabState) bool {
		return ts.URL == e.site.URL+"/e2e/close.html" && !ts.Loading && ts.Title == "Closing"
	})
	tab := string(r.Tab)
	obs := wantOK(t, e.call("web_use", map[string]any{"command": "observe", "page_context_token": pageToken(t, e, tab)}))
	ws := obs["web_session_id"].(string)
	spare := pageToken(t, e, tab)
	h, err := e.br.Handle(e.ctx, e.conv, consent.TabID(tab))
	if err != nil {
		t.Fatal(err)
	}
	closeRef := refOf(t, obs["snapshot"].(string), "button", "Close this tab")
	p := e.start("web_use", map[string]any{"command": "act", "web_session_id": ws,
		"arguments": map[string]any{"observationId": obs["observationId"], "action": map[string]any{"type": "click", "ref": closeRef}}})
	e.op.Approve(consent.KindAction, e.site.URL)
	p.result()
	select {
	case <-h.Done():
	case <-e.ctx.Done():
		t.Fatal("the page's own window.close never closed its tab")
	}
	if h.End() != browser.EndTabClosed {
		t.Fatalf("the tab's handle ended as %s", h.End())
	}
	gone := noBrowserCall(t, e, cb, e.conv, map[string]any{"command": "verify", "web_session_id": ws,
		"arguments": map[string]any{"assertion": "title_contains", "value": "Closing"}}, agent.CodeWebSessionNotFound)
	if _, ok := gone["recovery_tab_id"]; ok {
		t.Errorf("the session of a page that closed itself offers recovery: %v", gone)
	}
	noBrowserCall(t, e, cb, e.conv, map[string]any{"command": "observe", "page_context_token": spare}, errcode.TabClosed)
	e.waitTabGone(tab)
	for _, pg := range wantOK(t, e.call("web_use", map[string]any{"command": "list_pages"}))["pages"].([]any) {
		if pg.(map[string]any)["tab_id"] == tab {
			t.Errorf("list_pages after the page closed itself lists it: %v", pg)
		}
	}
}
