package mcpserver

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// The tests in this file run the real stack end to end: SDK clients over
// HTTP, this server, agent.Dispatcher, the consent engine and a headless
// Chromium on the fixture site. The fixture's request log is the witness
// that a refused call had no browser effect; the fake Surface of the other
// tests could not show that.

// e2eDelay is the key-ahead guard; the operator waits it out.
const e2eDelay = stacktest.ReviewDelay

// chromiumWorld is the stack (engine, Chromium, dispatcher) behind this
// server, the endpoint and the fixture site.
type chromiumWorld struct {
	ctx  context.Context
	stk  *stacktest.Stack
	eng  *consent.Engine
	srv  *Server
	url  string
	site *fixture.Server
}

func newChromiumWorld(t *testing.T) *chromiumWorld {
	t.Helper()
	return newChromiumWorldFor(t, 90*time.Second)
}

// newChromiumWorldFor is newChromiumWorld for a test that needs longer
// than 90 s.
func newChromiumWorldFor(t *testing.T, limit time.Duration) *chromiumWorld {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	stk := stacktest.Start(t, stacktest.Config{LaunchTimeout: limit})
	// The server closes before the dispatcher and the browser it drives.
	srv, url := serve(t, Config{Surface: stk.Dispatcher(t), Engine: stk.Engine, Version: "test"})
	return &chromiumWorld{ctx: ctx, stk: stk, eng: stk.Engine, srv: srv, url: url, site: stk.Site(t)}
}

// effects counts the requests that reached the site, less the favicon,
// which Chromium fetches on its own schedule after a load.
func (w *chromiumWorld) effects() int {
	n := 0
	for _, r := range w.site.Requests() {
		if r.Path != "/favicon.ico" {
			n++
		}
	}
	return n
}

// approve plays the operator for one review of kind for the site: it waits
// for the review to be queued, selects its tab as the operator would, waits
// out the key-ahead guard and approves.
func (w *chromiumWorld) approve(t *testing.T, kind consent.ReviewKind) {
	t.Helper()
	w.stk.Operator(t, w.ctx).SelectingQueued().Approve(kind, w.site.URL)
}

// call runs a tool that must answer without any review.
func (w *chromiumWorld) call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(w.ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if q := w.eng.Snapshot().Queue; len(q) != 0 {
		t.Fatalf("%s left a review pending: %+v", tool, q)
	}
	obj, _ := res.StructuredContent.(map[string]any)
	if obj == nil {
		t.Fatalf("%s: no structured content", tool)
	}
	return obj
}

// reviewed runs a tool whose single review of kind the operator approves.
func (w *chromiumWorld) reviewed(t *testing.T, cs *mcp.ClientSession, kind consent.ReviewKind, tool string, args map[string]any) map[string]any {
	t.Helper()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(w.ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		ch <- answer{res, err}
	}()
	w.approve(t, kind)
	a := <-ch
	if a.err != nil {
		t.Fatalf("%s: %v", tool, a.err)
	}
	obj, _ := a.res.StructuredContent.(map[string]any)
	if a.res.IsError || obj["ok"] != true {
		t.Fatalf("%s failed: %v", tool, obj)
	}
	return obj
}

// open opens the act page in a new tab of cs (approving its navigation
// review); the site, not the result, is the witness that the page loaded.
func (w *chromiumWorld) open(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	const page = "/e2e/act.html"
	before := w.site.Count(page)
	obj := w.reviewed(t, cs, consent.KindNavigation, "browser_open", map[string]any{"url": w.site.URL + page})
	tab, _ := obj["tabId"].(string)
	if tab == "" {
		t.Fatalf("open returned no tabId: %v", obj)
	}
	n := 0
	if _, err := w.site.WaitFor(w.ctx, func(r fixture.Request) bool {
		if r.Path == page {
			n++
		}
		return n > before
	}); err != nil {
		t.Fatalf("browser_open answered ok but the site never served %s: %v", page, err)
	}
	return tab
}

// observe reads tab (approving the read review) and returns the
// observation and the ref of the page's Ping button, whose click the site
// witnesses as /record?from=e2e-ping.
func (w *chromiumWorld) observe(t *testing.T, cs *mcp.ClientSession, tab string) (obs, ping string) {
	t.Helper()
	obj := w.reviewed(t, cs, consent.KindRead, "browser_observe", map[string]any{"tabId": tab})
	obs, _ = obj["observationId"].(string)
	snap, _ := obj["snapshot"].(string)
	for _, line := range strings.Split(snap, "\n") {
		if strings.Contains(line, `button "Ping server"`) {
			ping = strings.Fields(line)[0]
		}
	}
	if obs == "" || ping == "" {
		t.Fatalf("observation without id or Ping button: %v", obj)
	}
	return obs, ping
}

// tabsOf is the tab ids browser_tabs lists for cs, sorted.
func (w *chromiumWorld) tabsOf(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	obj := w.call(t, cs, "browser_tabs", nil)
	list, _ := obj["tabs"].([]any)
	ids := []string{}
	for _, e := range list {
		m, _ := e.(map[string]any)
		id, _ := m["tabId"].(string)
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// intrude makes cs try everything on another conversation's tab: each try
// must be wrong_conversation, undispatched, unreviewed, and leave the site
// untouched.
func (w *chromiumWorld) intrude(t *testing.T, cs *mcp.ClientSession, tab, obs, ref string) {
	t.Helper()
	before := w.effects()
	tries := []struct {
		tool string
		args map[string]any
	}{
		{"browser_observe", map[string]any{"tabId": tab}},
		{"browser_act", map[string]any{"tabId": tab, "observationId": obs, "action": map[string]any{"type": "click", "ref": ref}}},
		{"browser_navigate", map[string]any{"tabId": tab, "url": w.site.URL + "/record?from=intruder"}},
		{"browser_verify", map[string]any{"tabId": tab, "assertion": "text_contains", "value": "Ping"}},
	}
	for _, c := range tries {
		obj := w.call(t, cs, c.tool, c.args)
		if obj["code"] != string(errcode.WrongConversation) || obj["dispatched"] != false {
			t.Errorf("%s on a foreign tab: %v, want wrong_conversation, not dispatched", c.tool, obj)
		}
	}
	if after := w.effects(); after != before {
		t.Errorf("calls on a foreign tab reached the site: %d → %d requests", before, after)
	}
}

func operatorOwns(tab string) func(consent.State) bool {
	return func(st consent.State) bool {
		for _, t := range st.OperatorTabs {
			if string(t.ID) == tab {
				return true
			}
		}
		return false
	}
}

// TestConversationsOverRealChromium is issue 5's acceptance for identity:
// two tokens, and two stateful sessions on one token, are separate
// conversations that cannot touch each other's tabs or see them in
// browser_tabs; an ended session and a revoked token have no browser effect.
func TestConversationsOverRealChromium(t *testing.T) {
	w := newChromiumWorld(t)
	tokB, err := w.srv.MintToken("second")
	if err != nil {
		t.Fatal(err)
	}
	secretA := w.srv.DefaultToken().Secret
	a := stacktest.Connect(t, w.url, secretA, sessionlessVersion, "agent-a")
	b := stacktest.Connect(t, w.url, tokB.Secret, sessionlessVersion, "agent-b")

	tabA := w.open(t, a)
	obsA, pingA := w.observe(t, a, tabA)

	t.Run("another token gets wrong_conversation on the first's tab", func(t *testing.T) {
		w.intrude(t, b, tabA, obsA, pingA)
	})

	tabB := w.open(t, b)
	if got := w.tabsOf(t, a); !slices.Equal(got, []string{tabA}) {
		t.Errorf("token A's browser_tabs = %v, want only %s", got, tabA)
	}
	if got := w.tabsOf(t, b); !slices.Equal(got, []string{tabB}) {
		t.Errorf("token B's browser_tabs = %v, want only %s", got, tabB)
	}

	// Two stateful sessions on token A: two more conversations.
	s1 := stacktest.Connect(t, w.url, secretA, statefulVersion, "session-1")
	s2 := stacktest.Connect(t, w.url, secretA, statefulVersion, "session-2")
	if got := w.tabsOf(t, s1); len(got) != 0 {
		t.Errorf("a new session lists its token's sessionless tabs: %v", got)
	}
	tabS1 := w.open(t, s1)
	obsS1, pingS1 := w.observe(t, s1, tabS1)
	w.intrude(t, s2, tabS1, obsS1, pingS1)
	w.intrude(t, a, tabS1, obsS1, pingS1)
	w.intrude(t, s1, tabA, obsA, pingA)
	if got := w.tabsOf(t, s1); !slices.Equal(got, []string{tabS1}) {
		t.Errorf("session 1's browser_tabs = %v, want only %s", got, tabS1)
	}
	if got := w.tabsOf(t, s2); len(got) != 0 {
		t.Errorf("session 2's browser_tabs = %v, want none", got)
	}
	if got := w.tabsOf(t, a); !slices.Equal(got, []string{tabA}) {
		t.Errorf("token A's sessionless browser_tabs = %v, want only %s", got, tabA)
	}

	// The witness works: the owner's own click reaches the site.
	pings := func() int { return countPath(w.site, "/record", "from=e2e-ping") }
	obj := w.reviewed(t, a, consent.KindAction, "browser_act", map[string]any{"tabId": tabA, "observationId": obsA, "action": map[string]any{"type": "click", "ref": pingA}})
	if obj["dispatched"] != true {
		t.Fatalf("owner's click: %v", obj)
	}
	if _, err := w.site.WaitFor(w.ctx, func(r fixture.Request) bool {
		return r.Path == "/record" && strings.Contains(r.Query, "from=e2e-ping")
	}); err != nil {
		t.Fatalf("the owner's click never reached the site: %v", err)
	}

	t.Run("a call after the session ended has no browser effect", func(t *testing.T) {
		id := s1.ID()
		if err := s1.Close(); err != nil { // DELETE
			t.Fatal(err)
		}
		stacktest.WaitState(t, w.eng, "session 1's tab handed to the operator", operatorOwns(tabS1))
		before, beforePings := w.effects(), pings()
		status, _, body := rawRequest{
			Secret: secretA, Session: id,
			Body: rpcBody(t, "", "tools/call", map[string]any{"name": "browser_act", "arguments": map[string]any{
				"tabId": tabS1, "observationId": obsS1, "action": map[string]any{"type": "click", "ref": pingS1}}}),
		}.do(t, w.url)
		if status != http.StatusNotFound {
			t.Errorf("call on the ended session: status %d (%s), want 404", status, body)
		}
		// The sessionless conversation of the same token is another
		// conversation: the operator's tab is not its to touch either.
		w.intrude(t, a, tabS1, obsS1, pingS1)
		if after, afterPings := w.effects(), pings(); after != before || afterPings != beforePings {
			t.Errorf("after the session ended the site saw %d → %d requests (%d → %d pings)", before, after, beforePings, afterPings)
		}
		if q := w.eng.Snapshot().Queue; len(q) != 0 {
			t.Errorf("an ended session raised reviews: %+v", q)
		}
	})

	t.Run("a revoked token gets 401 and its tabs go to the operator", func(t *testing.T) {
		before := w.effects()
		if err := w.srv.RevokeToken("second"); err != nil {
			t.Fatal(err)
		}
		stacktest.WaitState(t, w.eng, "token B's tab handed to the operator", operatorOwns(tabB))
		if _, err := b.CallTool(w.ctx, &mcp.CallToolParams{Name: "browser_navigate", Arguments: map[string]any{
			"tabId": tabB, "url": w.site.URL + "/record?from=revoked"}}); err == nil {
			t.Errorf("the revoked client's next call succeeded")
		}
		status, hdr, _ := rawRequest{Secret: tokB.Secret, Version: sessionlessVersion,
			Body: rpcBody(t, sessionlessVersion, "tools/call", map[string]any{"name": "browser_navigate", "arguments": map[string]any{
				"tabId": tabB, "url": w.site.URL + "/record?from=revoked"}})}.do(t, w.url)
		if status != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("revoked token: status %d (WWW-Authenticate %q), want 401 with a challenge", status, hdr.Get("WWW-Authenticate"))
		}
		if after := w.effects(); after != before || countPath(w.site, "/record", "from=revoked") != 0 {
			t.Errorf("a revoked token's calls reached the site: %d → %d requests", before, after)
		}
		if got := w.tabsOf(t, a); !slices.Equal(got, []string{tabA}) {
			t.Errorf("after revoking B, A's browser_tabs = %v, want only %s", got, tabA)
		}
	})
}

// countPath counts the site's requests to path whose query contains q.
func countPath(s *fixture.Server, path, q string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Path == path && strings.Contains(r.Query, q) {
			n++
		}
	}
	return n
}
