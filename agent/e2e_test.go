package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// End-to-end tests of the tool dispatch in a real Chromium. Every gate is
// witnessed by the fixture server's request counters and by the reviews the
// engine put on screen, never by the returned envelope alone.

const actPage = "/e2e/act.html"

func TestE2EOpenWaitsForNavigationConsent(t *testing.T) {
	e := newE2E(t)
	p := e.start("browser_open", map[string]any{"url": e.site.URL + actPage})
	r := e.op.Await(consent.KindNavigation, e.site.URL)
	if r.ApproveLabel != "Allow origin in this tab" || r.Conversation != e.conv || r.Tab == "" {
		t.Fatalf("navigation review %+v", r)
	}
	if n := e.site.Total(); n != 0 {
		t.Fatalf("%d requests reached the site before the operator approved", n)
	}
	if p.returned() {
		t.Fatalf("open returned before the operator decided: %s", p.result().JSON())
	}
	e.op.Decide(r, true)
	obj := wantOK(t, p.result())
	if obj["tabId"] != string(r.Tab) || obj["url"] != e.site.URL+actPage || obj["next"] != "observe" || obj["visible"] != true {
		t.Fatalf("open result %v (review tab %s)", obj, r.Tab)
	}
	if n := e.site.Count(actPage); n != 1 {
		t.Fatalf("approved page requested %d times", n)
	}

	// Denied: the other origin never sees a request.
	other := newSite(t)
	p = e.start("browser_open", map[string]any{"url": other.URL + actPage})
	denied := e.op.Deny(consent.KindNavigation, other.URL)
	wantFail(t, p.result(), errcode.UserDenied, false)
	if n := other.Total(); n != 0 {
		t.Fatalf("%d requests reached the denied origin", n)
	}
	// The denied open closed the tab it made: nothing is left to use.
	if _, known := e.eng.Owner(denied.Tab); known {
		t.Fatalf("the denied open's tab %s is still open", denied.Tab)
	}
	wantFail(t, e.call("browser_observe", map[string]any{"tabId": string(denied.Tab)}), errcode.TabClosed, false)
	if n := reviewsShown(e.conv, consent.KindNavigation); n != 2 {
		t.Fatalf("%d navigation reviews shown, want 2", n)
	}
}

func TestE2EObserveWaitsForReadConsent(t *testing.T) {
	e := newE2E(t)
	tab := e.open(actPage)
	p := e.start("browser_observe", map[string]any{"tabId": tab})
	r := e.op.Await(consent.KindRead, e.site.URL)
	if r.ApproveLabel != "Allow reading this origin" || string(r.Tab) != tab {
		t.Fatalf("read review %+v", r)
	}
	if p.returned() {
		t.Fatalf("observe returned before the read review was answered: %s", p.result().JSON())
	}
	e.op.Decide(r, true)
	obj := wantOK(t, p.result())
	snap, _ := obj["snapshot"].(string)
	if obj["trust"] != "untrusted-site-content" || obj["tabId"] != tab {
		t.Fatalf("observation header %v", obj)
	}
	for _, want := range []string{"observation " + obj["observationId"].(string), `title "Dispatch checks"`} {
		if !strings.Contains(snap, want) {
			t.Fatalf("text form lacks %q:\n%s", want, snap)
		}
	}
	refOf(t, snap, "button", "Ping server")
	refOf(t, snap, "textbox", "Note")

	// The read grant covers the origin for the conversation: no second review.
	id2, _ := e.observe(tab, false)
	if id2 == obj["observationId"] {
		t.Fatalf("second observation reused id %s", id2)
	}
	if n := reviewsShown(e.conv, consent.KindRead); n != 1 {
		t.Fatalf("%d read reviews shown, want 1", n)
	}
	if n := e.site.Count(actPage); n != 1 {
		t.Fatalf("observing reloaded the page: %d requests", n)
	}
}

func TestE2EActClickAndRefusals(t *testing.T) {
	e := newE2E(t)
	tab := e.open(actPage)
	obs, snap := e.observe(tab, true)
	ping := refOf(t, snap, "button", "Ping server")

	p := e.start("browser_act", click(tab, obs, ping))
	r := e.op.Await(consent.KindAction, e.site.URL)
	if r.ApproveLabel != "Allow once" || r.Action == nil || r.Action.Type != consent.ActionClick ||
		r.Action.Ref != ping || r.Action.Role != "button" || r.Action.Name != "Ping server" {
		t.Fatalf("action review %+v action %+v", r, r.Action)
	}
	if n := recordHits(e.site, "e2e-ping"); n != 0 || p.returned() {
		t.Fatalf("click ran before approval (server saw %d pings)", n)
	}
	e.op.Decide(r, true)
	obj := wantOK(t, p.result())
	if obj["dispatched"] != true || obj["outcome"] != "not_yet_verified" || obj["next"] != "observe" {
		t.Fatalf("act receipt %v", obj)
	}
	waitRecord(t, e.ctx, e.site, "e2e-ping")

	// The observation was used up by the click.
	wantFail(t, e.call("browser_act", click(tab, obs, ping)), errcode.StaleObservation, false)

	obs, snap = e.observe(tab, false)
	pw := refOf(t, snap, "textbox", "Password")
	fill := map[string]any{"tabId": tab, "observationId": obs, "action": map[string]any{"type": "fill", "ref": pw, "text": "hunter2"}}
	wantFail(t, e.call("browser_act", fill), errcode.SignInRequired, false)

	locked := refOf(t, snap, "button", "Locked")
	wantFail(t, e.call("browser_act", click(tab, obs, locked)), errcode.ElementDisabled, false)

	// The modal is only found when the approved click is about to land;
	// nothing reaches the page.
	behind := refOf(t, snap, "button", "Behind modal")
	p = e.start("browser_act", click(tab, obs, behind))
	r = e.op.Approve(consent.KindAction, e.site.URL)
	if r.Action == nil || r.Action.Name != "Behind modal" {
		t.Fatalf("action review %+v", r.Action)
	}
	wantFail(t, p.result(), errcode.ElementObscured, false)
	if n := recordHits(e.site, "e2e-behind"); n != 0 {
		t.Fatalf("the click behind the modal reached the page (%d)", n)
	}
	if n := reviewsShown(e.conv, consent.KindAction); n != 2 {
		t.Fatalf("%d action reviews shown, want 2 (refusals known before the gate show none)", n)
	}
	if n := recordHits(e.site, "e2e-ping"); n != 1 {
		t.Fatalf("server saw %d pings, want exactly 1 (no retry)", n)
	}
}

func TestE2EDeniedActionIsNotDispatched(t *testing.T) {
	e := newE2E(t)
	tab := e.open(actPage)
	obs, snap := e.observe(tab, true)
	ping := refOf(t, snap, "button", "Ping server")
	p := e.start("browser_act", click(tab, obs, ping))
	e.op.Deny(consent.KindAction, e.site.URL)
	wantFail(t, p.result(), errcode.UserDenied, false)
	if n := recordHits(e.site, "e2e-ping"); n != 0 {
		t.Fatalf("denied click reached the server %d times", n)
	}
	// A denial does not consume the observation: the agent may ask again.
	p = e.start("browser_act", click(tab, obs, ping))
	e.op.Approve(consent.KindAction, e.site.URL)
	wantOK(t, p.result())
	waitRecord(t, e.ctx, e.site, "e2e-ping")
}

func TestE2EVerify(t *testing.T) {
	e := newE2E(t)
	tab := e.open(actPage)
	p := e.start("browser_verify", map[string]any{"tabId": tab, "assertion": "text_contains", "value": "Dispatch checks"})
	e.op.Approve(consent.KindRead, e.site.URL)
	obj := wantOK(t, p.result())
	if obj["verified"] != true || obj["trust"] != "untrusted-site-content" {
		t.Fatalf("verify %v", obj)
	}
	obj = wantOK(t, e.call("browser_verify", map[string]any{"tabId": tab, "assertion": "text_contains", "value": "nowhere on this page"}))
	if obj["verified"] != false {
		t.Fatalf("absent text verified: %v", obj)
	}
	for _, v := range []string{"", "   "} {
		wantFail(t, e.call("browser_verify", map[string]any{"tabId": tab, "assertion": "text_contains", "value": v}), errcode.InvalidAssertion, false)
	}
	wantFail(t, e.call("browser_verify", map[string]any{"tabId": tab, "assertion": "looks_nice", "value": "x"}), errcode.InvalidAssertion, false)
}

func TestE2EHandoffPausesEverything(t *testing.T) {
	e := newE2E(t)
	tab := e.open(actPage)
	obs, snap := e.observe(tab, true)
	ping := refOf(t, snap, "button", "Ping server")

	// An open waiting at its navigation review when the agent hands off
	// is aborted with the rest, and its origin never sees a request.
	waiting := newSite(t)
	held := e.start("browser_open", map[string]any{"url": waiting.URL + actPage})
	heldReview := e.op.AwaitQueued(consent.KindNavigation, waiting.URL)

	obj := wantOK(t, e.call("browser_handoff", map[string]any{"tabId": tab, "reason": "please sign in"}))
	if obj["status"] != "paused" || obj["next"] != "user_resume" {
		t.Fatalf("handoff %v", obj)
	}
	if !e.eng.Paused(e.conv) {
		t.Fatal("conversation not paused after handoff")
	}
	wantFail(t, held.result(), errcode.Paused, false)
	if n := waiting.Total(); n != 0 {
		t.Fatalf("%d requests reached an origin whose review was aborted by the take-over", n)
	}
	if err := e.eng.Decide(heldReview.ID, true); err == nil {
		t.Fatal("a review aborted by the take-over could still be approved")
	}
	obj = wantOK(t, e.call("browser_tabs", nil))
	if obj["paused"] != true {
		t.Fatalf("browser_tabs while paused: %v", obj)
	}
	before, tabsBefore := e.site.Total(), len(e.br.Tabs(e.conv))
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"browser_open", map[string]any{"url": e.site.URL + "/index.html"}},
		{"browser_open", map[string]any{"url": e.site.URL + "/index.html", "tabId": tab}},
		{"browser_navigate", map[string]any{"tabId": tab, "url": e.site.URL + "/index.html"}},
		{"browser_navigate", map[string]any{"tabId": tab, "action": "reload"}},
		{"browser_observe", map[string]any{"tabId": tab}},
		{"browser_act", click(tab, obs, ping)},
		{"browser_verify", map[string]any{"tabId": tab, "assertion": "text_contains", "value": "Dispatch"}},
	} {
		t.Run(c.tool, func(t *testing.T) {
			o := wantFail(t, e.call(c.tool, c.args), errcode.Paused, false)
			if o["next"] != "user_resume" {
				t.Errorf("next = %v", o["next"])
			}
		})
	}
	if n := e.site.Total(); n != before {
		t.Fatalf("%d requests reached the site while paused", n-before)
	}
	if n := len(e.br.Tabs(e.conv)); n != tabsBefore {
		t.Fatalf("%d tabs after open while paused, want %d", n, tabsBefore)
	}
	for _, ti := range e.br.Tabs(e.conv) {
		if string(ti.ID) != tab && ti.URL != "about:blank" {
			t.Fatalf("the aborted open's tab shows %s, want about:blank", ti.URL)
		}
	}

	if err := e.eng.Resume(e.conv); err != nil {
		t.Fatal(err)
	}
	wantFail(t, e.call("browser_act", click(tab, obs, ping)), errcode.StaleObservation, false)
	if n := recordHits(e.site, "e2e-ping"); n != 0 {
		t.Fatalf("stale click reached the server %d times", n)
	}
	// The origin had a navigation grant for this tab; take-over revoked it.
	p := e.start("browser_navigate", map[string]any{"tabId": tab, "url": e.site.URL + "/link.html"})
	e.op.Await(consent.KindNavigation, e.site.URL)
	if n := e.site.Count("/link.html"); n != 0 {
		t.Fatalf("%d requests before the renewed navigation consent", n)
	}
	e.op.Approve(consent.KindNavigation, e.site.URL)
	obj = wantOK(t, p.result())
	if obj["outcome"] != "navigation_finished" || obj["url"] != e.site.URL+"/link.html" {
		t.Fatalf("navigate %v", obj)
	}
	if n := e.site.Count("/link.html"); n != 1 {
		t.Fatalf("/link.html requested %d times", n)
	}
}

func TestE2EWrongConversation(t *testing.T) {
	e := newE2E(t)
	tab := e.open(actPage)
	obs, snap := e.observe(tab, true)
	ping := refOf(t, snap, "button", "Ping server")
	intruder := e.otherConv("intruder")
	before := e.site.Total()
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"browser_observe", map[string]any{"tabId": tab}},
		{"browser_act", click(tab, obs, ping)},
		{"browser_verify", map[string]any{"tabId": tab, "assertion": "text_contains", "value": "Dispatch"}},
		{"browser_navigate", map[string]any{"tabId": tab, "url": e.site.URL + "/index.html"}},
		{"browser_open", map[string]any{"tabId": tab, "url": e.site.URL + "/index.html"}},
		{"browser_handoff", map[string]any{"tabId": tab}},
	} {
		t.Run(c.tool, func(t *testing.T) {
			wantFail(t, e.callAs(intruder, c.tool, c.args), errcode.WrongConversation, false)
		})
	}
	obj := wantOK(t, e.callAs(intruder, "browser_tabs", nil))
	if tabs, _ := obj["tabs"].([]any); len(tabs) != 0 {
		t.Fatalf("the intruder sees tabs: %v", tabs)
	}
	if e.eng.Paused(e.conv) {
		t.Fatal("a foreign handoff paused the owner")
	}
	if n := e.site.Total(); n != before {
		t.Fatalf("%d requests reached the site from a foreign conversation", n-before)
	}
	// The owner's observation is untouched by the foreign attempt.
	p := e.start("browser_act", click(tab, obs, ping))
	e.op.Approve(consent.KindAction, e.site.URL)
	wantOK(t, p.result())
	waitRecord(t, e.ctx, e.site, "e2e-ping")
}

func TestE2EBusy(t *testing.T) {
	e := newE2E(t)
	tab := e.open(actPage)
	p := e.start("browser_observe", map[string]any{"tabId": tab})
	r := e.op.Await(consent.KindRead, e.site.URL)
	wantFail(t, e.call("browser_observe", map[string]any{"tabId": tab}), errcode.Busy, false)
	wantFail(t, e.call("browser_verify", map[string]any{"tabId": tab, "assertion": "text_contains", "value": "x"}), errcode.Busy, false)
	e.op.Decide(r, true)
	wantOK(t, p.result())
	// Free again once the first op ended.
	e.observe(tab, false)
}

func TestE2ETabClosed(t *testing.T) {
	e := newE2E(t)
	tab := e.open(actPage)
	obs, snap := e.observe(tab, true)
	ping := refOf(t, snap, "button", "Ping server")
	if err := e.br.CloseTab(e.ctx, e.conv, consentTab(tab)); err != nil {
		t.Fatal(err)
	}
	// Wait until the close is known: CloseTab returns before the registry
	// marks the tab closed, and a call in that window fails
	// browser_operation_failed (a lost CDP session) instead of tab_closed.
	e.waitTabGone(tab)
	wantFail(t, e.call("browser_observe", map[string]any{"tabId": tab}), errcode.TabClosed, false)
	wantFail(t, e.call("browser_act", click(tab, obs, ping)), errcode.TabClosed, false)
	wantFail(t, e.call("browser_verify", map[string]any{"tabId": tab, "assertion": "text_contains", "value": "x"}), errcode.TabClosed, false)
	wantFail(t, e.call("browser_navigate", map[string]any{"tabId": tab, "url": e.site.URL + actPage}), errcode.TabClosed, false)
	wantFail(t, e.call("browser_open", map[string]any{"tabId": tab, "url": e.site.URL + actPage}), errcode.TabClosed, false)
	wantFail(t, e.call("browser_handoff", map[string]any{"tabId": tab}), errcode.TabClosed, false)
	// Without tabId there is no tab to guess.
	wantFail(t, e.call("browser_observe", nil), errcode.TabClosed, false)
	obj := wantOK(t, e.call("browser_tabs", nil))
	if tabs, _ := obj["tabs"].([]any); len(tabs) != 0 {
		t.Fatalf("closed tab still listed: %v", tabs)
	}
	if n := recordHits(e.site, "e2e-ping"); n != 0 || e.site.Count(actPage) != 1 {
		t.Fatalf("closed tab was replaced or acted on: pings %d, page loads %d", n, e.site.Count(actPage))
	}
}

func TestE2EMissingSessionAndInvalidURL(t *testing.T) {
	e := newE2E(t)
	for _, tool := range []string{"browser_tabs", "browser_open", "browser_navigate", "browser_observe", "browser_act", "browser_verify", "browser_handoff"} {
		args := map[string]any{"url": e.site.URL + actPage}
		if tool == "browser_tabs" {
			args = nil
		}
		wantFail(t, e.callAs("", tool, args), errcode.MissingSession, false)
	}
	for _, u := range []string{
		"", "not a url", "/e2e/act.html", "ftp://127.0.0.1/", "javascript:alert(1)",
		"file:///etc/passwd", "http://user:pw@" + strings.TrimPrefix(e.site.URL, "http://") + "/", "http://",
	} {
		wantFail(t, e.call("browser_open", map[string]any{"url": u}), errcode.InvalidURL, false)
	}
	if n := len(e.br.Tabs(e.conv)); n != 0 {
		t.Fatalf("refused opens left %d tabs", n)
	}
	if n := e.site.Total(); n != 0 {
		t.Fatalf("%d requests reached the site", n)
	}
	tab := e.open(actPage)
	wantFail(t, e.call("browser_navigate", map[string]any{"tabId": tab, "url": "data:text/html,hi"}), errcode.InvalidURL, false)
	// Chromium fetches the page's favicon on its own after the load; only
	// requests tabwarden could have let through count.
	if n := siteRequests(e.site); n != 1 {
		t.Fatalf("%d requests, want only the approved open: %+v", n, e.site.Requests())
	}
}

func TestE2EPolicyBlocksBeforeAnyReview(t *testing.T) {
	allowed := newSite(t)
	e := newE2E(t, withPolicy(mustPolicy(t, allowed.URL)))
	// e.site is not in browserOrigins.
	wantFail(t, e.call("browser_open", map[string]any{"url": e.site.URL + actPage}), errcode.WebsiteBlocked, false)
	if n := e.site.Total(); n != 0 {
		t.Fatalf("%d requests reached the blocked origin", n)
	}
	if n := len(e.br.Tabs(e.conv)); n != 0 {
		t.Fatalf("a blocked open left %d tabs", n)
	}
	if n := reviewsShown(e.conv, consent.KindNavigation); n != 0 {
		t.Fatalf("%d navigation reviews shown for a blocked origin", n)
	}
	// The approved origin still asks its navigation consent.
	p := e.start("browser_open", map[string]any{"url": allowed.URL + actPage})
	e.op.Approve(consent.KindNavigation, allowed.URL)
	obj := wantOK(t, p.result())
	tab := obj["tabId"].(string)
	wantFail(t, e.call("browser_navigate", map[string]any{"tabId": tab, "url": e.site.URL + "/index.html"}), errcode.WebsiteBlocked, false)
	if n := e.site.Total(); n != 0 {
		t.Fatalf("%d requests reached the blocked origin", n)
	}
}

// One tool_call record per call, with the outcome code, and never the text
// the agent typed: neither in the dispatch's records nor in the engine's.
func TestE2EAuditOneRecordPerCallNoTypedText(t *testing.T) {
	const canary = "CANARY-7f3a91-do-not-log"
	e := newE2E(t)
	tab := e.open(actPage)
	obs, snap := e.observe(tab, true)
	note := refOf(t, snap, "textbox", "Note")
	fill := map[string]any{"tabId": tab, "observationId": obs, "action": map[string]any{"type": "fill", "ref": note, "text": canary}}
	p := e.start("browser_act", fill)
	r := e.op.Approve(consent.KindAction, e.site.URL)
	if r.Action == nil || r.Action.Text != canary {
		t.Fatalf("the operator must see the text to enter: %+v", r.Action)
	}
	wantOK(t, p.result())
	// The same stale fill again, and a call with no session.
	wantFail(t, e.call("browser_act", fill), errcode.StaleObservation, false)
	obj := wantOK(t, e.call("browser_verify", map[string]any{"tabId": tab, "assertion": "text_absent", "value": canary}))
	if obj["verified"] != true {
		t.Fatalf("a field value counted as page text: %v", obj)
	}

	want := []struct{ tool, code string }{
		{"browser_open", ""}, {"browser_observe", ""}, {"browser_act", ""},
		{"browser_act", "stale_observation"}, {"browser_verify", ""},
	}
	recs := e.log.Records()
	if len(recs) != len(want) {
		t.Fatalf("%d audit records for %d calls: %+v", len(recs), len(want), recs)
	}
	for i, rec := range recs {
		if rec.Kind != audit.KindToolCall || rec.Tool != want[i].tool || rec.Code != want[i].code ||
			rec.Conversation != string(e.conv) || rec.Time.IsZero() {
			t.Errorf("record %d = %+v, want %s code %q", i, rec, want[i].tool, want[i].code)
		}
		if i > 0 && rec.Tab != tab {
			t.Errorf("record %d tab %q, want %s", i, rec.Tab, tab)
		}
	}
	if in := recs[2].Input; !strings.Contains(in, "text") {
		t.Errorf("fill record input summary %q does not name the text field", in)
	}
	noCanary(t, "dispatch audit", recs, canary)
	var mine []audit.Record
	for _, rec := range e.stk.Audit.Records() {
		if rec.Conversation == string(e.conv) {
			mine = append(mine, rec)
		}
	}
	if len(mine) == 0 {
		t.Fatal("the engine audited nothing for this conversation")
	}
	noCanary(t, "engine audit", mine, canary)
}

func noCanary(t *testing.T, where string, recs []audit.Record, canary string) {
	t.Helper()
	b, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), canary) || strings.Contains(string(b), "7f3a91") {
		t.Fatalf("%s holds the typed text", where)
	}
}

// A link click the operator allowed does not carry navigation consent to
// another origin: the hook holds the request for its own review.
func TestE2ELinkClickToAnotherOriginIsHeld(t *testing.T) {
	e := newE2E(t)
	other := newSite(t)
	tab := e.open("/link.html?to=" + other.URL + actPage)
	obs, snap := e.observe(tab, true)
	link := refOf(t, snap, "link", "Go elsewhere")
	p := e.start("browser_act", click(tab, obs, link))
	e.op.Approve(consent.KindAction, e.site.URL)
	r := e.op.Await(consent.KindNavigation, other.URL)
	if string(r.Tab) != tab {
		t.Fatalf("navigation review for tab %s, want %s", r.Tab, tab)
	}
	if n := other.Total(); n != 0 {
		t.Fatalf("%d requests reached %s before its navigation consent", n, other.URL)
	}
	e.op.Decide(r, false)
	if res := p.result(); res.IsError {
		// The click itself was dispatched; a failure must say so.
		wantFail(t, res, errcode.Code(res.Code()), true)
	}
	if n := other.Total(); n != 0 {
		t.Fatalf("%d requests reached the denied origin", n)
	}
}

// Each cross-origin redirect hop is its own navigation review.
func TestE2ERedirectHopNeedsItsOwnConsent(t *testing.T) {
	e := newE2E(t)
	other := newSite(t)
	p := e.start("browser_open", map[string]any{"url": e.site.URL + "/302chain?n=2&to=" + other.URL + actPage})
	e.op.Approve(consent.KindNavigation, e.site.URL)
	e.op.Deny(consent.KindNavigation, other.URL)
	wantFail(t, p.result(), errcode.UserDenied, false)
	if n := other.Total(); n != 0 {
		t.Fatalf("%d requests reached the redirect target", n)
	}
	if n := e.site.Count("/302chain"); n != 2 {
		t.Fatalf("the approved origin saw %d hops, want 2", n)
	}
}

// A popup opened by an owned tab becomes an owned tab of the same
// conversation, with its opener and its own navigation consent; its review
// waits until the operator selects it.
func TestE2EPopupIsAnOwnedTabWithItsOwnConsent(t *testing.T) {
	e := newE2E(t)
	tab := e.open("/popup.html?to=" + actPage)
	obs, snap := e.observe(tab, true)
	p := e.start("browser_act", click(tab, obs, refOf(t, snap, "button", "Open popup")))
	e.op.Approve(consent.KindAction, e.site.URL)
	wantOK(t, p.result())
	r := e.op.AwaitQueued(consent.KindNavigation, e.site.URL)
	if string(r.Tab) == tab {
		t.Fatalf("popup navigation asked for the opener tab %s", tab)
	}
	if n := e.site.Count(actPage); n != 0 {
		t.Fatalf("%d requests for the popup's page before its navigation consent", n)
	}
	e.eng.Select(e.conv, r.Tab)
	e.op.Approve(consent.KindNavigation, e.site.URL)
	e.waitTab(r.Tab, "finished loading the page", func(ts consent.TabState) bool {
		return ts.URL == e.site.URL+actPage && !ts.Loading && ts.Title == "Dispatch checks"
	})
	obj := wantOK(t, e.call("browser_tabs", nil))
	tabs, _ := obj["tabs"].([]any)
	var popup map[string]any
	for _, x := range tabs {
		if m, _ := x.(map[string]any); m["tabId"] == string(r.Tab) {
			popup = m
		}
	}
	if len(tabs) != 2 || popup == nil || popup["openerTabId"] != tab || popup["status"] != "idle" || popup["title"] != "Dispatch checks" {
		t.Fatalf("tabs after the popup: %v", tabs)
	}
	// The read grant is the conversation's, per origin: the popup is readable.
	_, psnap := e.observe(string(r.Tab), false)
	refOf(t, psnap, "button", "Ping server")
	// A foreign conversation cannot touch the popup either.
	intruder := e.otherConv("intruder")
	wantFail(t, e.callAs(intruder, "browser_observe", map[string]any{"tabId": string(r.Tab)}), errcode.WrongConversation, false)
}

// A background open does not steal the operator's screen: while another
// review is on screen its review waits in the queue, and nothing reaches
// the site; once the screen is free it comes up by itself, its tab to the
// front (design.md §4, "No review waits unseen").
func TestE2EBackgroundOpenWaitsForSelection(t *testing.T) {
	e := newE2E(t)
	first := e.open(actPage)
	read := e.start("browser_observe", map[string]any{"tabId": first})
	onScreen := e.op.Await(consent.KindRead, e.site.URL)
	p := e.start("browser_open", map[string]any{"url": e.site.URL + "/link.html", "background": true})
	r := e.op.AwaitQueued(consent.KindNavigation, e.site.URL)
	st := e.eng.Snapshot()
	if st.Focused == nil || st.Focused.ID != onScreen.ID || st.Selection.Tab != consentTab(first) {
		t.Fatalf("background open took the screen: focused %+v, selection %+v", st.Focused, st.Selection)
	}
	if n := e.site.Count("/link.html"); n != 0 || p.returned() {
		t.Fatalf("background open went ahead unreviewed (%d requests)", n)
	}
	e.op.Decide(onScreen, true)
	wantOK(t, read.result())
	shown := e.op.Await(consent.KindNavigation, e.site.URL)
	if shown.ID != r.ID || e.eng.Snapshot().Selection.Tab != r.Tab {
		t.Fatalf("the free screen showed %+v, want the queued open's review %s with its tab selected", shown, r.ID)
	}
	if n := e.site.Count("/link.html"); n != 0 {
		t.Fatalf("%d requests before the open's review was answered", n)
	}
	e.op.Decide(shown, true)
	obj := wantOK(t, p.result())
	if obj["tabId"] != string(r.Tab) || e.site.Count("/link.html") != 1 {
		t.Fatalf("background open %v, %d requests", obj, e.site.Count("/link.html"))
	}
}

func TestE2ETabsListsOwnedTabs(t *testing.T) {
	e := newE2E(t)
	obj := wantOK(t, e.call("browser_tabs", nil))
	if tabs, _ := obj["tabs"].([]any); len(tabs) != 0 || obj["paused"] != false {
		t.Fatalf("fresh conversation: %v", obj)
	}
	tab := e.open(actPage)
	// The title is read from the document once it is parsed, and the load
	// reaches the console's state an event after the open's answer: wait
	// for both (a loaded machine showed the title with "loading" still on).
	e.waitTab(consentTab(tab), "showed its title, loaded", func(ts consent.TabState) bool {
		return ts.Title == "Dispatch checks" && ts.Status == consent.TabIdle
	})
	obj = wantOK(t, e.call("browser_tabs", nil))
	tabs, _ := obj["tabs"].([]any)
	if len(tabs) != 1 {
		t.Fatalf("tabs %v", tabs)
	}
	m, _ := tabs[0].(map[string]any)
	if m["tabId"] != tab || m["url"] != e.site.URL+actPage || m["title"] != "Dispatch checks" || m["visible"] != true ||
		m["status"] != "idle" || m["operation"] != "" || obj["trust"] != "untrusted-site-content" {
		t.Fatalf("tab entry %v", m)
	}
	if _, has := m["openerTabId"]; has {
		t.Fatalf("a tab the agent opened has an opener: %v", m)
	}
}

// back / forward / reload go through the same gates as a URL.
func TestE2ENavigateHistory(t *testing.T) {
	e := newE2E(t)
	tab := e.open(actPage)
	p := e.start("browser_navigate", map[string]any{"tabId": tab, "url": e.site.URL + "/link.html"})
	// Same origin, same tab: the navigation grant covers it.
	obj := wantOK(t, p.result())
	if obj["url"] != e.site.URL+"/link.html" {
		t.Fatalf("navigate %v", obj)
	}
	obj = wantOK(t, e.call("browser_navigate", map[string]any{"tabId": tab, "action": "back"}))
	if obj["url"] != e.site.URL+actPage {
		t.Fatalf("back %v", obj)
	}
	obj = wantOK(t, e.call("browser_navigate", map[string]any{"tabId": tab, "action": "reload"}))
	if obj["url"] != e.site.URL+actPage || e.site.Count(actPage) < 2 {
		t.Fatalf("reload %v, %d loads", obj, e.site.Count(actPage))
	}
	wantFail(t, e.call("browser_navigate", map[string]any{"tabId": tab, "action": "sideways"}), errcode.InvalidAction, false)
	wantFail(t, e.call("browser_navigate", map[string]any{"tabId": tab, "action": "back", "url": e.site.URL}), errcode.InvalidAction, false)
}

// The operator's cancel (x) ends the op waiting at its review; a tab closed
// under a waiting review ends it tab_closed. Neither reads the page.
func TestE2ECancelAndCloseEndWaitingReviews(t *testing.T) {
	e := newE2E(t)
	tab := e.open(actPage)
	p := e.start("browser_observe", map[string]any{"tabId": tab})
	e.op.Await(consent.KindRead, e.site.URL)
	if err := e.eng.Cancel(e.conv); err != nil {
		t.Fatal(err)
	}
	wantFail(t, p.result(), errcode.Canceled, false)
	if n := reviewsShown(e.conv, consent.KindRead); n != 1 {
		t.Fatalf("%d read reviews shown", n)
	}

	p = e.start("browser_observe", map[string]any{"tabId": tab})
	e.op.Await(consent.KindRead, e.site.URL)
	if err := e.br.CloseTab(e.ctx, e.conv, consentTab(tab)); err != nil {
		t.Fatal(err)
	}
	wantFail(t, p.result(), errcode.TabClosed, false)
	if st := e.eng.Snapshot(); len(st.Queue) != 0 {
		t.Fatalf("reviews left after the tab closed: %+v", st.Queue)
	}
}

// Everything the dispatch can refuse before the gate shows no review and
// reaches nothing.
func TestE2EActRefusedBeforeTheGate(t *testing.T) {
	e := newE2E(t)
	tab := e.open(actPage)
	obs, snap := e.observe(tab, true)
	ping := refOf(t, snap, "button", "Ping server")
	act := func(action map[string]any) map[string]any {
		return map[string]any{"tabId": tab, "observationId": obs, "action": action}
	}
	for _, c := range []struct {
		name string
		tool string
		args any
		code errcode.Code
	}{
		{"no observation", "browser_act", map[string]any{"tabId": tab, "action": map[string]any{"type": "click", "ref": ping}}, errcode.StaleObservation},
		{"unknown observation", "browser_act", map[string]any{"tabId": tab, "observationId": "o-nope", "action": map[string]any{"type": "click", "ref": ping}}, errcode.StaleObservation},
		{"unknown ref", "browser_act", act(map[string]any{"type": "click", "ref": "e9999"}), errcode.StaleElement},
		{"bad key", "browser_act", act(map[string]any{"type": "key", "key": "F13"}), errcode.InvalidKey},
		{"scroll too far", "browser_act", act(map[string]any{"type": "scroll", "deltaY": 5000}), errcode.InvalidScroll},
		{"click x,y without image", "browser_act", act(map[string]any{"type": "click", "x": 10, "y": 10}), errcode.ImageRequired},
		{"unknown action", "browser_act", act(map[string]any{"type": "hover", "ref": ping}), errcode.InvalidAction},
		{"fill a button", "browser_act", act(map[string]any{"type": "fill", "ref": ping, "text": "x"}), errcode.NotEditable},
		{"unknown argument", "browser_observe", map[string]any{"tabId": tab, "conversation": "someone-else"}, errcode.InvalidAction},
		{"arguments not an object", "browser_observe", "[1,2]", errcode.InvalidAction},
		{"unknown tool", "browser_eval", map[string]any{"js": "1"}, errcode.InvalidAction},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantFail(t, e.call(c.tool, c.args), c.code, false)
		})
	}
	if n := reviewsShown(e.conv, consent.KindAction); n != 0 {
		t.Fatalf("%d action reviews for refused actions", n)
	}
	// None of that used the observation up.
	p := e.start("browser_act", click(tab, obs, ping))
	e.op.Approve(consent.KindAction, e.site.URL)
	wantOK(t, p.result())
	waitRecord(t, e.ctx, e.site, "e2e-ping")
}

// A DOM change and a scroll expire observations; an act on an expired one
// is stale_observation and shows no review.
func TestE2EExpiryThroughTheDispatch(t *testing.T) {
	e := newE2E(t)
	tab := e.open(actPage)
	older, _ := e.observe(tab, true)
	obs, snap := e.observe(tab, false)
	grow := refOf(t, snap, "button", "Add line")
	p := e.start("browser_act", click(tab, obs, grow))
	e.op.Approve(consent.KindAction, e.site.URL)
	wantOK(t, p.result())
	ping := refOf(t, snap, "button", "Ping server")
	wantFail(t, e.call("browser_act", click(tab, older, ping)), errcode.StaleObservation, false)

	obs, _ = e.observe(tab, false)
	before, _ := e.observe(tab, false)
	p = e.start("browser_act", map[string]any{"tabId": tab, "observationId": obs, "action": map[string]any{"type": "scroll", "deltaY": 400}})
	r := e.op.Approve(consent.KindAction, e.site.URL)
	if r.Action == nil || r.Action.Type != consent.ActionScroll || r.Action.DeltaY != 400 {
		t.Fatalf("scroll review %+v", r.Action)
	}
	wantOK(t, p.result())
	// The scroll lands after the act's answer ("not_yet_verified").
	waitRecord(t, e.ctx, e.site, "e2e-scrolled-far")
	obj := wantOK(t, e.call("browser_observe", map[string]any{"tabId": tab}))
	if sc, _ := obj["scroll"].(map[string]any); sc["y"].(float64) < 500 {
		t.Fatalf("the approved scroll did not move the page: %v", sc)
	}
	wantFail(t, e.call("browser_act", click(tab, before, ping)), errcode.StaleObservation, false)
	if n := recordHits(e.site, "e2e-ping"); n != 0 {
		t.Fatalf("a stale click reached the server %d times", n)
	}
}

// Password and one-time-code fields are the operator's: no action review
// is offered for them, and no image is taken while one is visible.
func TestE2ESignInFieldsAreTheOperators(t *testing.T) {
	e := newE2E(t)
	tab := e.open("/signin.html")
	p := e.start("browser_observe", map[string]any{"tabId": tab, "includeImage": true})
	e.op.Approve(consent.KindRead, e.site.URL)
	res := p.result()
	o := wantFail(t, res, errcode.SignInRequired, false)
	if o["next"] != "user_resume" || len(res.Image) != 0 {
		t.Fatalf("image observation of a sign-in page: next %v, %d image bytes", o["next"], len(res.Image))
	}
	obs, snap := e.observe(tab, false)
	for _, name := range []string{"Password", "One-time code"} {
		ref := refOf(t, snap, "textbox", name)
		fill := map[string]any{"tabId": tab, "observationId": obs, "action": map[string]any{"type": "fill", "ref": ref, "text": "123456"}}
		wantFail(t, e.call("browser_act", fill), errcode.SignInRequired, false)
	}
	if n := reviewsShown(e.conv, consent.KindAction); n != 0 {
		t.Fatalf("%d action reviews offered for sign-in fields", n)
	}
	if n := e.site.Count("/signin"); n != 0 {
		t.Fatalf("sign-in reached the server %d times", n)
	}
}
