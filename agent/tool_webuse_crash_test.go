package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// webUseCommands is the profile's command list as its schema publishes it
// (the dispatch takes it from the same list).
func webUseCommands(t *testing.T) []string {
	t.Helper()
	sch, err := agent.WebUse.Tools[0].InputSchema()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range sch.Properties["command"].Enum {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

// wantWebUseWords fails when a web_use answer points at anything the
// profile does not have.
func wantWebUseWords(t *testing.T, r agent.Result, commands []string) {
	t.Helper()
	if n, _ := r.Object["next"].(string); n != "" && !slices.Contains(commands, n) {
		t.Errorf("next %q is not a web_use command: %s", n, r.JSON())
	}
	if strings.Contains(fmt.Sprint(r.Object["error"]), "browser_") {
		t.Errorf("message names a tool web_use does not have: %s", r.JSON())
	}
}

// TestE2EWebUseAcrossAChromiumCrash is issue 11's acceptance for web_use
// and a crash: a click lands (the site counts it), Chromium is killed, and
// the session's next commands — the first sent at once, on the dying
// connection — answer browser_unavailable with retry_command list_pages
// or, once Chromium is back, the lost session's recovery hints; never
// browser_operation_failed. Opening the hinted URL and observing it gives
// recovered_page:true, previous_action_replayed:false, and the site never
// sees the click twice.
func TestE2EWebUseAcrossAChromiumCrash(t *testing.T) {
	e := newE2E(t)
	commands := webUseCommands(t)
	tab := e.open("/e2e/batch.html")
	e.observe(tab, true)
	obs := wantOK(t, e.call("web_use", map[string]any{"command": "observe", "page_context_token": pageToken(t, e, tab)}))
	ws, _ := obs["web_session_id"].(string)
	send := refOf(t, obs["snapshot"].(string), "button", "Send")
	p := e.start("web_use", map[string]any{"command": "act", "web_session_id": ws,
		"arguments": map[string]any{"observationId": obs["observationId"], "action": map[string]any{"type": "click", "ref": send}}})
	e.op.Approve(consent.KindAction, e.site.URL)
	wantOK(t, p.result())
	waitRecord(t, e.ctx, e.site, "batch")
	pageURL := e.site.URL + "/e2e/batch.html"

	pid := e.br.PID()
	if pid == 0 {
		t.Fatal("no Chromium pid")
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	unavailable := 0
	var hints map[string]any
	for hints == nil {
		began := time.Now()
		r := e.call("web_use", map[string]any{"command": "verify", "web_session_id": ws,
			"arguments": map[string]any{"assertion": "title_contains", "value": "Batch"}})
		took := time.Since(began)
		t.Logf("after the kill: %s in %s", r.Code(), took)
		wantWebUseWords(t, r, commands)
		switch obj := roundTrip(t, r); obj["code"] {
		case string(errcode.BrowserUnavailable):
			if obj["retry_command"] != "list_pages" {
				t.Fatalf("browser_unavailable without retry_command list_pages: %v", obj)
			}
			unavailable++
		case string(agent.CodeWebSessionNotFound):
			hints = obj
		default:
			t.Fatalf("after the kill (%s in): %v, want browser_unavailable or the recovery hints", took, obj)
		}
		if took > 25*time.Second {
			t.Fatalf("a command waited %s for the relaunch; the bound is 20 s", took)
		}
		if e.ctx.Err() != nil {
			t.Fatal("no recovery hints")
		}
	}
	if hints["recovery_tab_id"] != tab || hints["recovery_command"] != "open" || hints["recovery_url"] != pageURL || hints["dispatched"] != false {
		t.Fatalf("lost-to-crash answer = %v, want recovery of %s at %s", hints, tab, pageURL)
	}
	// Stable: the same answer on the next use.
	again := roundTrip(t, e.call("web_use", map[string]any{"command": "observe", "web_session_id": ws}))
	if again["code"] != hints["code"] || again["recovery_url"] != pageURL {
		t.Errorf("second use of the lost session = %v, first %v", again, hints)
	}

	t.Logf("hints at %s", time.Now().Format(time.StampMilli))
	po := e.start("web_use", map[string]any{"command": "open", "arguments": map[string]any{"url": pageURL}})
	e.op.Approve(consent.KindNavigation, e.site.URL)
	opened := wantOK(t, po.result())
	wantWebUseWords(t, agent.Result{Object: opened}, commands)
	newTab, _ := opened["opened_tab_id"].(string)
	t.Logf("reopened at %s", time.Now().Format(time.StampMilli))
	tok := pageToken(t, e, newTab)
	pr := e.start("web_use", map[string]any{"command": "observe", "page_context_token": tok})
	// The read grant of the origin may still stand; approve only if asked.
	for !pr.returned() {
		if len(e.eng.Snapshot().Queue) > 0 {
			e.op.Approve(consent.KindRead, e.site.URL)
			break
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-e.ctx.Done():
			t.Fatal("observe of the reopened page never answered")
		}
	}
	rec := wantOK(t, pr.result())
	if rec["recovered_page"] != true || rec["previous_action_replayed"] != false {
		t.Errorf("observation of the reopened page = %v, want recovered_page:true, previous_action_replayed:false", rec)
	}
	if n := len(batchRecords(e)); n != 1 {
		t.Errorf("the site saw the click %d times, want exactly once", n)
	}
	t.Logf("browser_unavailable answers before the hints: %d", unavailable)
}

// TestE2EWebUseTokenStatesAreStable: a spent token answers its state's
// one code on every use (issue 11: stale turned into not_found on the
// second use), and a token alone follows seed 002: fresh, verify observes
// first and then verifies; consumed, verify runs on the live session the
// token opened, while observe stays page_context_consumed.
func TestE2EWebUseTokenStatesAreStable(t *testing.T) {
	cb := &countingBrowser{}
	e := newE2E(t, func(c *agent.DispatcherConfig) { cb.Browser = c.Browser; c.Browser = cb })
	commands := webUseCommands(t)
	tab := e.open("/e2e/batch.html")
	e.observe(tab, true)

	verify := map[string]any{"assertion": "title_contains", "value": "Batch"}
	tok := pageToken(t, e, tab)
	v := wantOK(t, e.call("web_use", map[string]any{"command": "verify", "page_context_token": tok, "arguments": verify}))
	ws, _ := v["web_session_id"].(string)
	if v["verified"] != true || ws == "" {
		t.Fatalf("verify with a fresh token = %v, want it verified on a new session", v)
	}
	v2 := wantOK(t, e.call("web_use", map[string]any{"command": "verify", "page_context_token": tok, "arguments": verify}))
	if v2["verified"] != true || v2["web_session_id"] != ws {
		t.Errorf("verify with the consumed token = %v, want the live session %s", v2, ws)
	}
	for range 2 {
		r := noBrowserCall(t, e, cb, e.conv, map[string]any{"command": "observe", "page_context_token": tok}, agent.CodePageContextConsumed)
		wantWebUseWords(t, agent.Result{Object: r}, commands)
	}

	stale := pageToken(t, e, tab)
	p := e.start("browser_navigate", map[string]any{"tabId": tab, "url": e.site.URL + "/e2e/batch.html?moved=1"})
	if !waitReturnOrApprove(t, e, p, consent.KindNavigation) {
		t.Fatal("navigate never answered")
	}
	wantOK(t, p.result())
	for range 3 {
		r := noBrowserCall(t, e, cb, e.conv, map[string]any{"command": "observe", "page_context_token": stale}, agent.CodePageContextStale)
		wantWebUseWords(t, agent.Result{Object: r}, commands)
	}

	closing := pageToken(t, e, tab)
	e.closeTabs(e.conv)
	e.waitTabGone(tab)
	for range 2 {
		r := noBrowserCall(t, e, cb, e.conv, map[string]any{"command": "observe", "page_context_token": closing}, errcode.TabClosed)
		wantWebUseWords(t, agent.Result{Object: r}, commands)
	}
	noBrowserCall(t, e, cb, e.conv, map[string]any{"command": "observe", "page_context_token": "pct_never"}, agent.CodePageContextNotFound)
}

// waitReturnOrApprove approves a review of kind if the call asks one.
func waitReturnOrApprove(t *testing.T, e *e2e, p *pending, kind consent.ReviewKind) bool {
	t.Helper()
	for !p.returned() {
		if len(e.eng.Snapshot().Queue) > 0 {
			e.op.Approve(kind, e.site.URL)
			return true
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-e.ctx.Done():
			return false
		}
	}
	return true
}

// relaunchedBrowser is a Chromium that went down under a call and is back
// by the time the call's failure is read: the call itself failed
// browser_unavailable, but Available already says nil.
type relaunchedBrowser struct{ stacktest.GoneBrowser }

func (relaunchedBrowser) NewTab(context.Context, consent.ConversationID, bool) (consent.TabID, error) {
	return "", errcode.Errorf(errcode.BrowserUnavailable, errcode.NextListTabs, "Chromium stopped; it is being restarted")
}

// TestWebUseBrowserUnavailableSaysWhatToRetry: a web_use command that met a
// Chromium crash answers browser_unavailable with retry_command list_pages
// even when the relaunch ended before the answer was made (the race: open
// passed its wait for the browser, Chromium died under NewTab, and the
// answer went out without a retry_command).
func TestWebUseBrowserUnavailableSaysWhatToRetry(t *testing.T) {
	eng := consent.New(consent.Config{ReviewDelay: reviewDelay})
	const conv consent.ConversationID = "crash-race"
	eng.AddConversation(conv, "crash-race")
	d := agent.NewDispatcher(agent.DispatcherConfig{Engine: eng, Browser: relaunchedBrowser{}})
	t.Cleanup(d.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := d.Call(ctx, conv, agent.WebUse.Tools[0].Name, json.RawMessage(`{"command":"open","arguments":{"url":"http://127.0.0.1:1/"}}`))
	if res.Code() != string(errcode.BrowserUnavailable) || res.Object["retry_command"] != "list_pages" || res.Object["dispatched"] != false {
		t.Fatalf("open across a crash = %s, want browser_unavailable, not dispatched, with retry_command list_pages", res.JSON())
	}
}
