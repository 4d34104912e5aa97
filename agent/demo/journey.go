package demo

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/tabwarden/tabwarden/browser/fixture"
	"github.com/tabwarden/tabwarden/consent"
)

// Journey is DESIGN §10 as data: each step one call (or one wait) and the
// outcome the journey expects of it.
func Journey() []Step {
	return []Step{
		{Name: "tabs", Says: "listing my tabs — no gate; a new agent owns none", Run: stepTabs},
		{Name: "open", Says: "opening the fixture's sign-in page — the navigation gate asks you to \"Allow origin in this tab\" (nothing reaches the site before you press a)", Run: stepOpen},
		{Name: "observe-signin", Says: "reading the page with a screenshot — the read gate asks you to \"Allow reading this origin\"; a visible password field must refuse the image", Run: stepObserveSignIn},
		{Name: "handoff", Says: "handing the browser to you: I must not type passwords", Run: stepHandoff},
		{Name: "await-resume", Says: "waiting while you sign in in the Chromium window, then press r to resume", Run: stepAwaitResume},
		{Name: "session", Says: "reading the page again — it should now say \"Session active\"", Run: stepSession},
		{Name: "site-tools", Says: "going to the drafts page and listing its site tools — the navigation gate asks again (take-over revoked it), then discovery reads the page", Run: stepSiteTools},
		{Name: "save-draft", Says: "calling the site tool save_draft — first \"Allow once\" (it runs), then \"Share result\" (only then do I see what it returned)", Run: stepSaveDraft},
		{Name: "saved", Says: "observing the page to check the outcome myself: a receipt is not success", Run: stepSaved},
		{Name: "dom-click", Says: "going to a page without site tools and clicking its button through the page instead — \"Allow once\" shows the target", Run: stepDOMClick},
		{Name: "stale", Says: "trying the same observation again — it was used up by the click, so the console refuses without asking you", Run: stepStale},
		{Name: "popup", Says: "the click opened a popup: it becomes my tab but needs its own navigation consent — select it with ↓ in the TUI to see its review", Run: stepPopup},
		{Name: "foreign", Says: "a second agent tries to read my popup — the console refuses it without asking you", Run: stepForeign},
		{Name: "redirect", Says: "following a redirect to another origin — the hop is held for its own navigation review; please press d to deny it", Run: stepRedirect},
		{Name: "policy-blocked", Says: "policy run: a console whose policy lists only the fixture refuses any other origin before any review", Run: stepPolicyBlocked},
		{Name: "policy-upload", Says: "policy run: opening a page that tries to upload (POST, PUT, beacon) while the policy blocks uploads — allow the navigation in the policy run's tab (select it with tab)", Run: stepPolicyUpload},
		{Name: "close", Says: "closing my tab the way you would close its window, then using it: a closed tab is an explicit tab_closed", Run: stepClose},
	}
}

func stepTabs(ctx context.Context, a *Agent) error {
	r, err := a.ok(a.mine(ctx, "browser_tabs", nil), "listing tabs")
	if err != nil {
		return err
	}
	tabs, _ := r.obj["tabs"].([]any)
	a.say(fmt.Sprintf("→ ok: %d tabs", len(tabs)))
	if len(tabs) != 0 {
		return a.unexpected("a fresh agent owns %d tabs", len(tabs))
	}
	return nil
}

func stepOpen(ctx context.Context, a *Agent) error {
	r, err := a.ok(a.mine(ctx, "browser_open", map[string]any{"url": a.cfg.Site.URL + "/signin.html"}), "opening the site")
	if err != nil {
		return err
	}
	a.Tab = r.str("tabId")
	a.say("→ ok: opened " + a.Tab + ", next: " + r.str("next"))
	if a.Tab == "" {
		return a.unexpected("open returned no tabId")
	}
	return nil
}

func stepObserveSignIn(ctx context.Context, a *Agent) error {
	r := a.mine(ctx, "browser_observe", map[string]any{"tabId": a.Tab, "includeImage": true})
	return a.want(r, consent.CodeSignInRequired, "a password field is on screen; that is the person's job")
}

func stepHandoff(ctx context.Context, a *Agent) error {
	r, err := a.ok(a.mine(ctx, "browser_handoff", map[string]any{"tabId": a.Tab, "reason": "please sign in"}), "handing off")
	if err != nil {
		return err
	}
	a.say("→ " + r.str("status") + ", next: " + r.str("next"))
	a.say(fmt.Sprintf("you have the browser: in the Chromium window sign in with user name %q and password %q (any non-empty pair works), then press r here", User, Password))
	return nil
}

func stepAwaitResume(ctx context.Context, a *Agent) error {
	if err := a.waitState(ctx, func(consent.State) bool { return !a.cfg.Engine.Paused(a.cfg.Conv) }); err != nil {
		return err
	}
	a.say(fmt.Sprintf("→ resumed; the site saw %d sign-in(s)", countPath(a.cfg.Site, "POST", "/signin")))
	return nil
}

func stepSession(ctx context.Context, a *Agent) error {
	r, err := a.ok(a.mine(ctx, "browser_observe", map[string]any{"tabId": a.Tab}), "reading the page")
	if err != nil {
		return err
	}
	a.Observation = r.str("observationId")
	title := shortTitle(r)
	a.say(fmt.Sprintf("→ ok: %s, title %q", a.Observation, title))
	if !contains(r.str("snapshot"), "Session active") {
		return a.unexpected("the page does not say Session active (title %q): was the sign-in done?", title)
	}
	return nil
}

func stepSiteTools(ctx context.Context, a *Agent) error {
	if _, err := a.ok(a.mine(ctx, "browser_navigate", map[string]any{"tabId": a.Tab, "url": a.cfg.Site.URL + "/webmcp/tools.html"}), "going to the drafts page"); err != nil {
		return err
	}
	r, err := a.ok(a.mine(ctx, "webmcp_list_tools", map[string]any{"tabId": a.Tab}), "listing site tools")
	if err != nil {
		return err
	}
	tools, _ := r.obj["tools"].([]any)
	rejected, _ := r.obj["rejectedTools"].([]any)
	var names []string
	for _, t := range tools {
		m, _ := t.(map[string]any)
		name, _ := m["name"].(string)
		names = append(names, name)
		if name == "save_draft" {
			a.saveDraft, _ = m["toolId"].(string)
		}
	}
	a.say(fmt.Sprintf("→ ok: %d tools (%s), %d rejected", len(tools), strings.Join(names, ", "), len(rejected)))
	for _, want := range []string{"read_status", "save_draft", "slow_save"} {
		if !containsName(names, want) {
			return a.unexpected("site tool %s is not listed (got %v)", want, names)
		}
	}
	return nil
}

func containsName(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

func stepSaveDraft(ctx context.Context, a *Agent) error {
	r, err := a.ok(a.mine(ctx, "webmcp_call_tool", map[string]any{"tabId": a.Tab, "toolId": a.saveDraft, "input": map[string]any{"title": "Demo draft"}}), "calling save_draft")
	if err != nil {
		return err
	}
	a.say("→ ok: " + r.str("outcome") + " — the result reached me only after you shared it")
	return nil
}

func stepSaved(ctx context.Context, a *Agent) error {
	r, err := a.ok(a.mine(ctx, "browser_observe", map[string]any{"tabId": a.Tab}), "reading the page")
	if err != nil {
		return err
	}
	saved := contains(r.str("snapshot"), "Saved 1")
	a.say(fmt.Sprintf("→ ok: the page shows Saved 1: %v", saved))
	if !saved {
		return a.unexpected("the page does not show Saved 1")
	}
	return nil
}

func stepDOMClick(ctx context.Context, a *Agent) error {
	if _, err := a.ok(a.mine(ctx, "browser_navigate", map[string]any{"tabId": a.Tab, "url": a.cfg.Site.URL + "/popup.html?to=/link.html"}), "going to the popup page"); err != nil {
		return err
	}
	r, err := a.ok(a.mine(ctx, "webmcp_list_tools", map[string]any{"tabId": a.Tab}), "listing site tools")
	if err != nil {
		return err
	}
	if tools, _ := r.obj["tools"].([]any); len(tools) != 0 {
		return a.unexpected("the popup page lists %d site tools", len(tools))
	}
	a.say("→ no site tools here: falling back to the page itself")
	r, err = a.ok(a.mine(ctx, "browser_observe", map[string]any{"tabId": a.Tab}), "reading the page")
	if err != nil {
		return err
	}
	a.Observation = r.str("observationId")
	a.popupRef = refOf(r.str("snapshot"), "button", "Open popup")
	if a.popupRef == "" {
		return a.unexpected("no button \"Open popup\" in the observation")
	}
	r, err = a.ok(a.mine(ctx, "browser_act", a.click()), "clicking Open popup")
	if err != nil {
		return err
	}
	a.say(fmt.Sprintf("→ ok: dispatched %v, %s", r.obj["dispatched"], r.str("outcome")))
	return nil
}

func (a *Agent) click() map[string]any {
	return map[string]any{"tabId": a.Tab, "observationId": a.Observation, "action": map[string]any{"type": "click", "ref": a.popupRef}}
}

func stepStale(ctx context.Context, a *Agent) error {
	return a.want(a.mine(ctx, "browser_act", a.click()), consent.CodeStaleObservation, "an observation is used up by the first action")
}

func stepPopup(ctx context.Context, a *Agent) error {
	want := a.cfg.Site.URL + "/link.html"
	// A refusal is known from the decision itself: between an approval and
	// the load starting, the tab looks the same as after a denial.
	refused := make(chan consent.TabID, 8)
	stop := a.cfg.Engine.Listen(func(ev consent.Event) {
		if ev.Kind == consent.EventDecision && !ev.Approved && ev.Conversation == a.cfg.Conv && ev.Tab != consent.TabID(a.Tab) {
			select {
			case refused <- ev.Tab:
			default:
			}
		}
	})
	defer stop()
	ch, unsub := a.cfg.Engine.Changes()
	defer unsub()
	// The fixture serving the page is the other witness that it loaded: a
	// popup's loading flag may lag (it is the browser's to report).
	served := make(chan struct{})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if _, err := a.cfg.Site.WaitPath(wctx, "/link.html"); err == nil {
			close(served)
		}
	}()
	var popup consent.TabState
	denied, hit := false, false
	for {
		t, ok := tabIn(a.cfg.Engine.Snapshot(), a.cfg.Conv, func(t consent.TabState) bool { return string(t.OpenerTabID) == a.Tab })
		if ok {
			popup = t
			if t.URL == want && (!t.Loading || hit) {
				break
			}
		}
		select {
		case <-ch:
			continue
		case <-served:
			hit, served = true, nil
			continue
		case id := <-refused:
			if ok && id == popup.ID {
				denied = true
			}
			if !denied {
				continue
			}
		case <-ctx.Done():
			return a.unexpected("the popup never loaded %s (last seen: %q loading=%v): %v", want, popup.URL, popup.Loading, ctx.Err())
		}
		break
	}
	a.Popup = string(popup.ID)
	if denied {
		a.say("→ the popup's navigation was not allowed")
		return fmt.Errorf("%w: the popup's navigation", ErrStopped)
	}
	r, err := a.ok(a.mine(ctx, "browser_tabs", nil), "listing tabs")
	if err != nil {
		return err
	}
	tabs, _ := r.obj["tabs"].([]any)
	for _, t := range tabs {
		m, _ := t.(map[string]any)
		if m["tabId"] == a.Popup {
			a.say(fmt.Sprintf("→ ok: %d tabs; %s was opened by %v", len(tabs), a.Popup, m["openerTabId"]))
			if m["openerTabId"] != a.Tab {
				return a.unexpected("the popup's openerTabId is %v, want %s", m["openerTabId"], a.Tab)
			}
			return nil
		}
	}
	return a.unexpected("browser_tabs does not list the popup %s", a.Popup)
}

func stepForeign(ctx context.Context, a *Agent) error {
	if a.cfg.Visitor == nil {
		a.say("→ skipped: no second agent in this run")
		return nil
	}
	r := a.call(ctx, a.cfg.Visitor, a.cfg.VisitorConv, "browser_observe", map[string]any{"tabId": a.Popup})
	return a.want(r, consent.CodeWrongConversation, "a tab belongs to exactly one conversation")
}

func stepRedirect(ctx context.Context, a *Agent) error {
	to := a.cfg.Second.URL + "/index.html"
	r := a.mine(ctx, "browser_navigate", map[string]any{"tabId": a.Tab, "url": a.cfg.Site.URL + "/302chain?n=1&to=" + url.QueryEscape(to)})
	n := a.cfg.Second.Total()
	if r.isErr && r.code() == string(consent.CodeUserDenied) {
		a.say(fmt.Sprintf("→ user_denied: the redirect stopped at the hop; %s saw %d requests", a.cfg.Second.URL, n))
		if n != 0 {
			return a.unexpected("the denied origin saw %d requests", n)
		}
		return nil
	}
	if !r.isErr {
		a.say("→ ok: you allowed the hop, so the tab is on the second origin now")
		return nil
	}
	_, err := a.ok(r, "following the redirect")
	return err
}

func stepPolicyBlocked(ctx context.Context, a *Agent) error {
	if a.cfg.PolicySurface == nil {
		a.say("→ skipped: no policy run in this demo")
		return nil
	}
	r := a.call(ctx, a.cfg.PolicySurface, a.cfg.PolicyConv, "browser_open", map[string]any{"url": a.cfg.Second.URL + "/index.html"})
	if err := a.want(r, consent.CodeWebsiteBlocked, "the policy does not list that origin"); err != nil {
		return err
	}
	if n := a.cfg.Second.Total(); n != 0 {
		return a.unexpected("the blocked origin saw %d requests", n)
	}
	return nil
}

func stepPolicyUpload(ctx context.Context, a *Agent) error {
	if a.cfg.PolicySurface == nil {
		a.say("→ skipped: no policy run in this demo")
		return nil
	}
	before := len(a.cfg.Site.Requests())
	r, err := a.ok(a.call(ctx, a.cfg.PolicySurface, a.cfg.PolicyConv, "browser_open", map[string]any{"url": a.cfg.Site.URL + "/uploads.html"}), "opening the upload page")
	if err != nil {
		return err
	}
	// The hook counts each request it fails on the tab's document; the
	// page makes three (POST, PUT, beacon), so three blocked is the signal
	// that every attempt was made and stopped.
	tab := r.str("tabId")
	if err := a.waitState(ctx, func(st consent.State) bool {
		t, ok := tabIn(st, a.cfg.PolicyConv, func(t consent.TabState) bool { return string(t.ID) == tab })
		return ok && t.BlockedRequests >= 3
	}); err != nil {
		return a.unexpected("the policy run's tab never reported its uploads blocked: %v", err)
	}
	sent := 0
	for _, q := range a.cfg.Site.Requests()[before:] {
		if q.Path == "/record" && q.Method != "GET" && q.Method != "HEAD" {
			sent++
		}
	}
	a.say(fmt.Sprintf("→ the page tried POST, PUT and a beacon; the policy failed them in the browser and the server received %d", sent))
	if sent != 0 {
		return a.unexpected("%d upload requests reached the server", sent)
	}
	return nil
}

func stepClose(ctx context.Context, a *Agent) error {
	if a.cfg.CloseTab == nil {
		a.say("→ skipped: nothing can close tabs in this run")
		return nil
	}
	if err := a.cfg.CloseTab(ctx, a.cfg.Conv, consent.TabID(a.Tab)); err != nil {
		return a.unexpected("closing the tab: %v", err)
	}
	// The agent's next call comes after the console has seen the close.
	if err := a.waitState(ctx, func(consent.State) bool {
		_, known := a.cfg.Engine.Owner(consent.TabID(a.Tab))
		return !known
	}); err != nil {
		return err
	}
	return a.want(a.mine(ctx, "browser_observe", map[string]any{"tabId": a.Tab}), consent.CodeTabClosed, "a closed tab is never silently replaced")
}

// countPath counts requests to path with method.
func countPath(s *fixture.Server, method, path string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}
