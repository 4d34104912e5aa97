package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// chromiumPages is Chromium's own list of page targets, id → URL, read from
// its DevTools HTTP endpoint (/json/list) rather than through the browser
// package: the witness that no tab exists beyond what the console reports.
func chromiumPages(t *testing.T) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, devtools(t)+"/json/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("/json/list: %v", err)
	}
	defer res.Body.Close()
	var targets []struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		URL  string `json:"url"`
	}
	if err := json.NewDecoder(res.Body).Decode(&targets); err != nil {
		t.Fatalf("/json/list: %v", err)
	}
	out := map[string]string{}
	for _, tg := range targets {
		if tg.Type == "page" {
			out[tg.ID] = tg.URL
		}
	}
	return out
}

// devtools is the shared Chromium's DevTools HTTP endpoint.
func devtools(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(stack.Launched().ProfileDir, "DevToolsActivePort"))
	if err != nil {
		t.Fatalf("DevTools port: %v", err)
	}
	port, _, _ := strings.Cut(string(raw), "\n")
	return "http://127.0.0.1:" + strings.TrimSpace(port)
}

// newPages is Chromium's page targets that were not in before, waiting (up
// to the test's context) until cond holds for them: a closed target leaves
// Chromium's list a moment after Target.closeTarget returns.
func (e *e2e) newPages(before map[string]string, what string, cond func(map[string]string) bool) map[string]string {
	e.t.Helper()
	for {
		now := map[string]string{}
		for id, u := range chromiumPages(e.t) {
			if _, old := before[id]; !old {
				now[id] = u
			}
		}
		if cond(now) {
			return now
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-e.ctx.Done():
			e.t.Fatalf("Chromium's targets never %s: %v", what, now)
		}
	}
}

// siteRequests counts what reached the site but Chromium's own favicon
// fetch, which follows a load at a time of its choosing.
func siteRequests(s *fixture.Server) int { return s.PageRequests() }

func urls(pages map[string]string) []string {
	var out []string
	for _, u := range pages {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// tabURLs is what browser_tabs lists for the test's conversation.
func (e *e2e) tabURLs() []string {
	e.t.Helper()
	obj := wantOK(e.t, e.call("browser_tabs", nil))
	list, _ := obj["tabs"].([]any)
	out := []string{}
	for _, x := range list {
		m, _ := x.(map[string]any)
		u, _ := m["url"].(string)
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// Issue 10's acceptance: 13 denied opens, then an approved one, succeed;
// browser_tabs and Chromium's own target list agree (no blank tab left).
func TestE2EDeniedOpensLeaveNoTab(t *testing.T) {
	e := newE2E(t)
	denied := newSite(t)
	before := chromiumPages(t)
	const denials = 13 // one past the default tab_limit of 12
	for i := range denials {
		p := e.start("browser_open", map[string]any{"url": fmt.Sprintf("%s%s?try=%d", denied.URL, actPage, i)})
		r := e.op.Deny(consent.KindNavigation, denied.URL)
		wantFail(t, p.result(), errcode.UserDenied, false)
		if _, known := e.eng.Owner(r.Tab); known {
			t.Fatalf("denial %d: tab %s is still open", i+1, r.Tab)
		}
	}
	if n := denied.Total(); n != 0 {
		t.Fatalf("%d requests reached the denied origin", n)
	}
	if got := e.tabURLs(); len(got) != 0 {
		t.Fatalf("after %d denials browser_tabs lists %v", denials, got)
	}
	e.newPages(before, "dropped the denied tabs", func(p map[string]string) bool { return len(p) == 0 })

	tab := e.open(actPage)
	want := []string{e.site.URL + actPage}
	if got := e.tabURLs(); !slices.Equal(got, want) {
		t.Fatalf("browser_tabs = %v, want %v", got, want)
	}
	pages := e.newPages(before, "showed the one approved tab", func(p map[string]string) bool { return len(p) >= 1 })
	if got := urls(pages); !slices.Equal(got, want) {
		t.Fatalf("Chromium's new page targets %v, browser_tabs %v (tab %s)", got, want, tab)
	}
	if n := reviewsShown(e.conv, consent.KindNavigation); n != denials+1 {
		t.Fatalf("%d navigation reviews, want %d", n, denials+1)
	}
}

// A navigation error after consent (nothing listens on the port) leaves
// no tab either, in the console or in Chromium.
func TestE2EFailedOpenLeavesNoTab(t *testing.T) {
	e := newE2E(t)
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	_ = l.Close()
	before := chromiumPages(t)
	p := e.start("browser_open", map[string]any{"url": dead + "/nothing"})
	r := e.op.Approve(consent.KindNavigation, dead)
	obj := wantFail(t, p.result(), errcode.BrowserOperationFailed, false)
	if !strings.Contains(fmt.Sprint(obj["error"]), "ERR_CONNECTION_REFUSED") {
		t.Fatalf("failure %v, want the connection refused", obj)
	}
	if _, known := e.eng.Owner(r.Tab); known {
		t.Fatalf("the failed open's tab %s is still open", r.Tab)
	}
	if got := e.tabURLs(); len(got) != 0 {
		t.Fatalf("browser_tabs lists %v after a failed open", got)
	}
	e.newPages(before, "dropped the failed open's tab", func(p map[string]string) bool { return len(p) == 0 })
}

func TestE2EBrowserClose(t *testing.T) {
	e := newE2E(t)
	before := chromiumPages(t)
	tab := e.open(actPage)
	e.newPages(before, "showed the opened tab", func(p map[string]string) bool { return len(p) == 1 })
	requests := siteRequests(e.site)

	// Ownership: another conversation cannot close it.
	other := e.otherConv("intruder")
	wantFail(t, e.callAs(other, "browser_close", map[string]any{"tabId": tab}), errcode.WrongConversation, false)
	wantFail(t, e.call("browser_close", map[string]any{}), errcode.InvalidAction, false)
	if _, known := e.eng.Owner(consent.TabID(tab)); !known {
		t.Fatalf("a refused close closed the tab")
	}

	// The owner closes it, with no review (e.call fails on any review).
	obj := wantOK(t, e.call("browser_close", map[string]any{"tabId": tab}))
	if obj["tabId"] != tab || obj["closed"] != true {
		t.Fatalf("close receipt %v", obj)
	}
	e.newPages(before, "dropped the closed tab", func(p map[string]string) bool { return len(p) == 0 })
	if got := e.tabURLs(); len(got) != 0 {
		t.Fatalf("browser_tabs lists %v after close", got)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"browser_observe", map[string]any{"tabId": tab}},
		{"browser_navigate", map[string]any{"tabId": tab, "url": e.site.URL + actPage}},
		{"browser_open", map[string]any{"tabId": tab, "url": e.site.URL + actPage}},
		{"browser_close", map[string]any{"tabId": tab}},
	} {
		wantFail(t, e.call(c.tool, c.args), errcode.TabClosed, false)
	}
	if n := siteRequests(e.site); n != requests {
		t.Fatalf("closing reached the site: %d → %d requests", requests, n)
	}
	var closes []audit.Record
	for _, r := range e.log.Records() {
		if r.Kind == audit.KindToolCall && r.Tool == "browser_close" {
			closes = append(closes, r)
		}
	}
	if len(closes) != 4 || closes[2].Decision != "ok" || closes[2].Tab != tab || closes[2].Conversation != string(e.conv) ||
		closes[0].Code != string(errcode.WrongConversation) || closes[3].Code != string(errcode.TabClosed) {
		t.Fatalf("browser_close audit %+v", closes)
	}
}

// The tabs of an ended conversation are Chromium targets until the grace is
// over, and gone after it.
func TestE2EEndedConversationTabsCloseAfterTheGrace(t *testing.T) {
	e := newE2E(t)
	before := chromiumPages(t)
	tab := consent.TabID(e.open(actPage))
	e.eng.RemoveConversation(e.conv)
	st := e.eng.Snapshot()
	var ended *consent.EndedConversation
	for i := range st.Ended {
		if st.Ended[i].ID == e.conv {
			ended = &st.Ended[i]
		}
	}
	if ended == nil || !slices.Equal(ended.Tabs, []consent.TabID{tab}) {
		t.Fatalf("ended conversations %+v", st.Ended)
	}
	if owner, known := e.eng.Owner(tab); !known || owner != "" {
		t.Fatalf("during the grace tab %s is owned by %q (known %v), want the operator", tab, owner, known)
	}
	now := e.newPages(before, "were read", func(map[string]string) bool { return true })
	if got := urls(now); !slices.Equal(got, []string{e.site.URL + actPage}) {
		t.Fatalf("right after the end Chromium's new targets are %v, want the tab still open", got)
	}
	start := time.Now()
	e.waitTabGone(string(tab))
	if took := time.Since(start); took < endedGrace/2 {
		// Not a speed target: a close long before the grace is a bug.
		t.Fatalf("the tab closed %v after the end, grace %v", took, endedGrace)
	}
	e.newPages(before, "dropped the ended conversation's tab", func(p map[string]string) bool { return len(p) == 0 })
	if st := e.eng.Snapshot(); len(st.Ended) != 0 {
		t.Fatalf("still ended after the grace: %+v", st.Ended)
	}
}

// Invalid ports, port 0 and oversize URLs fail invalid_url before any
// review (e.call fails on one) and before any tab exists.
func TestE2EInvalidURLsMakeNoTabAndNoReview(t *testing.T) {
	e := newE2E(t)
	before := chromiumPages(t)
	bad := []string{
		"http://127.0.0.1:99999/", "http://127.0.0.1:0/", "http://127.0.0.1:65536/", "http://[::1]:0/",
		e.site.URL + "/?q=" + strings.Repeat("x", 3<<20), e.site.URL + "/?q=" + strings.Repeat("x", agent.MaxURLBytes),
	}
	for _, u := range bad {
		wantFail(t, e.call("browser_open", map[string]any{"url": u}), errcode.InvalidURL, false)
		res := e.call(agent.WebUse.Tools[0].Name, map[string]any{"command": "open", "arguments": map[string]any{"url": u}})
		if res.Code() != string(errcode.InvalidURL) {
			t.Errorf("web_use open %.40q: %s", u, res.JSON())
		}
	}
	if n := len(e.br.Tabs(e.conv)); n != 0 {
		t.Fatalf("refused opens left %d tabs", n)
	}
	if p := e.newPages(before, "stayed as they were", func(map[string]string) bool { return true }); len(p) != 0 {
		t.Fatalf("refused opens made Chromium targets %v", p)
	}
	if n := reviewsShown(e.conv, consent.KindNavigation); n != 0 {
		t.Fatalf("%d navigation reviews for refused URLs", n)
	}

	tab := e.open(actPage)
	loads := siteRequests(e.site)
	for _, u := range bad {
		wantFail(t, e.call("browser_navigate", map[string]any{"tabId": tab, "url": u}), errcode.InvalidURL, false)
	}
	if n := siteRequests(e.site); n != loads {
		t.Fatalf("refused navigations reached the site: %d → %d", loads, n)
	}
	if got := e.tabURLs(); !slices.Equal(got, []string{e.site.URL + actPage}) {
		t.Fatalf("tab moved: %v", got)
	}
	if n := reviewsShown(e.conv, consent.KindNavigation); n != 1 {
		t.Fatalf("%d navigation reviews, want only the approved open's", n)
	}
}
