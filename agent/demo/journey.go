package demo

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Journey is design.md §10 as data: each step one call (or one wait) and the
// outcome the journey expects of it.
func Journey() []Step {
	return []Step{
		{Name: "tabs", Says: "I list my tabs (no review needed); a new agent owns none. Nothing to press.", Run: stepTabs},
		{Name: "open", Says: "I open the fixture's sign-in page. No request reaches the site before you decide. You: press a (\"Allow origin in this tab\").", Run: stepOpen},
		{Name: "observe-signin", Says: "I read the page with a screenshot. You: press a (\"Allow reading this origin\"). The console then refuses me anyway: a password field is on screen, and that is your job.", Run: stepObserveSignIn},
		{Name: "handoff", Says: "I hand the browser to you for the sign-in: an agent must not type passwords. Nothing to press yet.", Run: stepHandoff},
		{Name: "await-resume", Says: signInHelp, Headless: headlessSignIn, Run: stepAwaitResume},
		{Name: "session", Says: "I read the page again (reading stays allowed: no review). It should say \"Session active\". Nothing to press.", Run: stepSession},
		{Name: "site-tools", Says: "I go to the drafts page and list its site tools. Your take-over revoked my navigation consent, so it asks again. You: press a (\"Allow origin in this tab\").", Run: stepSiteTools},
		{Name: "save-draft", Says: "I call the site tool save_draft. Two reviews: press a (\"Allow once\") and it runs; then press a (\"Share result\") and only then do I see what it returned.", Run: stepSaveDraft},
		{Name: "saved", Says: "I observe the page to check the outcome myself: a tool's receipt is not success. Nothing to press.", Run: stepSaved},
		{Name: "dom-click", Says: "I go to a page without site tools and click its button through the page instead. You: press a (\"Allow once\"); the review names the button.", Run: stepDOMClick},
		{Name: "stale", Says: "I try the same observation again. The click used it up, so the console refuses without asking you. Nothing to press.", Run: stepStale},
		{Name: "popup", Says: "The click opened a popup: it is my tab, but it needs its own navigation consent. Its review comes on screen by itself, with the new tab in front. You: press a.", Run: stepPopup},
		{Name: "foreign", Says: "A second agent tries to read my popup. The console refuses it without asking you. Nothing to press.", Run: stepForeign},
		{Name: "redirect", Says: "I follow a redirect to the second origin, which you never approve. The hop needs its own review on my first tab, which comes on screen by itself. You: press d to deny.", Run: stepRedirect},
		{Name: "policy-blocked", Says: "Policy run: a second Chromium, launched with a policy that lists only the fixture, refuses any other origin before any review. Nothing to press.", Run: stepPolicyBlocked},
		{Name: "policy-upload", Says: "Policy run: it opens a page that tries to upload (POST, PUT, beacon); its policy blocks uploads. Its review, in conversation \"demo policy run\", comes on screen by itself. You: press a.", Run: stepPolicyUpload},
		{Name: "close", Says: "I close my tab the way you would close its window, then use it: a closed tab is an explicit tab_closed, never silently replaced. Nothing to press.", Run: stepClose},
	}
}

// signInHelp is what the operator does during the take-over; it names the
// credentials because the screen is all a newcomer has.
// A window the operator cannot see (xvfb-run) looks like any other display
// to the demo, so the page view is always named beside the window.
var signInHelp = fmt.Sprintf("Your turn, in the Chromium window or here (v shows the page, i types into it; tab moves between fields): "+
	"user name %q, password %q (leave One-time code empty), then Sign in "+
	"(if Chromium offers to save the password: No thanks). When the page says \"Session active\", press r here.", User, Password)

// headlessSignIn replaces signInHelp when there is no window to sign in
// through.
var headlessSignIn = fmt.Sprintf("You have the browser, but this run has no window (--headless): the console signs in for you as user name %q (v shows the page). "+
	"Wait for \"Signed in\" below, then press r.", User)

// signInTries bounds how often the walk hands the browser back when the
// operator resumed without signing in.
const signInTries = 3

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
	return a.want(r, errcode.SignInRequired, "a password field is on screen; that is the person's job")
}

// handoffReason is what the hand-off asks of the operator; headless, the
// console signs in for them, so it does not ask them to.
func (a *Agent) handoffReason() string {
	if a.cfg.SignIn != nil {
		return "the console signs in for you; wait for \"Signed in\""
	}
	return "please sign in"
}

func stepHandoff(ctx context.Context, a *Agent) error {
	r, err := a.ok(a.mine(ctx, "browser_handoff", map[string]any{"tabId": a.Tab, "reason": a.handoffReason()}), "handing off")
	if err != nil {
		return err
	}
	a.say("→ " + r.str("status") + ", next: " + r.str("next"))
	return nil
}

// The take-over banner while the console signs in for the operator
// (Config.SignIn), and once it has: nothing is left to type, so the banner
// asks for none.
var (
	signingInNote = fmt.Sprintf("The console is signing in for you as user name %q; there is nothing to type. Wait until this line says it is done, then press r to resume.", User)
	signedInNote  = fmt.Sprintf("The console signed in for you as user name %q (the page says \"Session active\"); there is nothing to type. Press r to resume.", User)
)

// signInNote is the headed demo's take-over banner: what to type stays
// on screen however little room the log has (at 80×24 with the page view
// open the log showed no line).
var signInNote = fmt.Sprintf("Sign in as user name %q, password %q, One-time code empty: in the Chromium window, or here with v then i "+
	"(tab moves between fields, enter submits, esc stops typing). When the page says \"Session active\", press r.", User, Password)

func stepAwaitResume(ctx context.Context, a *Agent) error {
	if a.cfg.SignIn == nil {
		a.cfg.Engine.SetPauseNote(a.cfg.Conv, signInNote)
	}
	if a.cfg.SignIn != nil {
		a.cfg.Engine.SetPauseNote(a.cfg.Conv, signingInNote)
		if err := a.cfg.SignIn(ctx, a.Tab); err != nil {
			return a.unexpected("signing in for you: %v", err)
		}
		a.cfg.Engine.SetPauseNote(a.cfg.Conv, signedInNote)
		a.say("Signed in: the page says \"Session active\". Press r.")
	}
	if err := a.waitState(ctx, func(consent.State) bool { return !a.cfg.Engine.Paused(a.cfg.Conv) }); err != nil {
		return err
	}
	signIns := "sign-ins"
	n := countPath(a.cfg.Site, "POST", "/signin")
	if n == 1 {
		signIns = "sign-in"
	}
	a.say(fmt.Sprintf("→ resumed; the site saw %d %s", n, signIns))
	return nil
}

// stepSession checks the sign-in worked. Pressing r before signing in is
// the newcomer's likeliest slip, so the walk hands the browser back (a
// bounded number of times) instead of failing.
func stepSession(ctx context.Context, a *Agent) error {
	for try := 1; ; try++ {
		r, err := a.ok(a.mine(ctx, "browser_observe", map[string]any{"tabId": a.Tab}), "reading the page")
		if err != nil {
			return err
		}
		a.Observation = r.str("observationId")
		title := shortTitle(r)
		a.say(fmt.Sprintf("→ ok: %s, title %q", a.Observation, title))
		if strings.Contains(r.str("snapshot"), "Session active") {
			return nil
		}
		if try == signInTries {
			return a.unexpected("the page does not say Session active (title %q): was the sign-in done?", title)
		}
		if _, err := a.ok(a.mine(ctx, "browser_handoff", map[string]any{"tabId": a.Tab, "reason": a.handoffReason()}), "handing off"); err != nil {
			return err
		}
		// One entry: on a small screen only the newest shows whole.
		help := signInHelp
		if a.cfg.SignIn != nil {
			help = headlessSignIn
		}
		a.say("The sign-in did not happen (the page does not say \"Session active\"), so I hand the browser back. " + help)
		if err := stepAwaitResume(ctx, a); err != nil {
			return err
		}
	}
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
	var refused []string
	for _, t := range rejected {
		m, _ := t.(map[string]any)
		name, _ := m["name"].(string)
		code, _ := m["code"].(string)
		refused = append(refused, name+" ("+code+")")
	}
	a.say(fmt.Sprintf("→ ok: %d tools (%s); the console refused %d the page offered: %s", len(tools), strings.Join(names, ", "), len(rejected), strings.Join(refused, ", ")))
	for _, want := range []string{"read_status", "save_draft", "slow_save"} {
		if !slices.Contains(names, want) {
			return a.unexpected("site tool %s is not listed (got %v)", want, names)
		}
	}
	for _, hostile := range []string{"find_drafts", "import_drafts"} {
		if slices.Contains(names, hostile) || !slices.Contains(refused, hostile+" (unsupported_schema)") {
			return a.unexpected("the hostile site tool %s was not refused as unsupported_schema (listed %v, refused %v)", hostile, names, refused)
		}
	}
	return nil
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
	saved := strings.Contains(r.str("snapshot"), "Saved 1")
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
	return a.want(a.mine(ctx, "browser_act", a.click()), errcode.StaleObservation, "an observation is used up by the first action")
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
		return a.refused(string(errcode.UserDenied), "the popup's navigation")
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
	return a.want(r, errcode.WrongConversation, "a tab belongs to exactly one conversation")
}

func stepRedirect(ctx context.Context, a *Agent) error {
	to := a.cfg.Second.URL + "/index.html"
	r := a.mine(ctx, "browser_navigate", map[string]any{"tabId": a.Tab, "url": a.cfg.Site.URL + "/302chain?n=1&to=" + url.QueryEscape(to)})
	n := a.cfg.Second.Total()
	if r.isErr && r.code() == string(errcode.UserDenied) {
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
	// The page is marked: the main browser may have been sent to this
	// origin already (an allowed redirect hop, or a profile grant that
	// covers it), and only the policy run's request is the witness. A
	// document that never loads makes no other request.
	const marker = "from=policy-run"
	r := a.call(ctx, a.cfg.PolicySurface, a.cfg.PolicyConv, "browser_open", map[string]any{"url": a.cfg.Second.URL + "/index.html?" + marker})
	if err := a.want(r, errcode.WebsiteBlocked, "the policy does not list that origin"); err != nil {
		return err
	}
	n := 0
	for _, q := range a.cfg.Second.Requests() {
		if q.Query == marker {
			n++
		}
	}
	if n != 0 {
		return a.unexpected("the blocked origin saw the policy run's request %d times", n)
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
	return a.want(a.mine(ctx, "browser_observe", map[string]any{"tabId": a.Tab}), errcode.TabClosed, "a closed tab is never silently replaced")
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
