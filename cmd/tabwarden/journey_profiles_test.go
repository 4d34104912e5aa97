package main

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
)

// The reference journey (design.md §10) under the consent profiles thread and
// trusted: the same demo script over MCP, the same TUI keys, but the
// operator meets only the panels the profile raises. The counts below are
// exact: a profile that asks once more or once less than design.md §4 says
// fails, and so does a panel of a kind the profile should never show.
//
// Why the counts are what they are (consent/grants.go, design.md §4):
//   - The profile's grant panel ("Allow browser control for this thread" or
//     "Allow for this session") comes with the conversation's first gated
//     step: browser_open's navigation.
//   - The take-over for the sign-in revokes the conversation's grant (as it
//     revokes navigation consent in strict), so the first step after resume,
//     the observe that shows "Session active", raises the panel again; a
//     read grant would have survived, a profile grant does not.
//   - The policy run is its own conversation, so its open raises its own
//     grant panel.
//   - A profile grant covers navigation to every origin in every tab of the
//     conversation: the popup loads without a panel, and the redirect hop to
//     the second origin is followed without one (strict holds and denies it).
//   - thread still asks "Allow once" for the site-tool call and the DOM
//     click; trusted runs both unprompted. Disclosure asks in every profile.

// reviewKey is one line of a profile's expected review count.
type reviewKey struct {
	conv consent.ConversationID
	kind consent.ReviewKind
}

// reviewTally is the engine's review history as the audit log holds it:
// written synchronously under the engine lock, so once the journey has run
// nothing of it is still in flight. A review that leaves the screen and
// returns is one review (one ID).
type reviewTally struct {
	shown   map[string]audit.Record // review ID → its first review_shown record
	decided map[string]audit.Record // review ID → its decision record
}

func tallyReviews(log *audittest.Memory) reviewTally {
	tl := reviewTally{shown: map[string]audit.Record{}, decided: map[string]audit.Record{}}
	for _, rec := range log.Records() {
		switch rec.Kind {
		case audit.KindReviewShown:
			if _, seen := tl.shown[rec.Review]; !seen {
				tl.shown[rec.Review] = rec
			}
		case audit.KindDecision:
			tl.decided[rec.Review] = rec
		}
	}
	return tl
}

func (tl reviewTally) counts() map[reviewKey]int {
	out := map[reviewKey]int{}
	for _, rec := range tl.shown {
		out[reviewKey{consent.ConversationID(rec.Conversation), consent.ReviewKind(rec.ReviewKind)}]++
	}
	return out
}

// check compares what the engine showed with want, exactly, and demands
// that every review the engine raised was shown and approved by the
// operator: in these profiles the journey denies nothing, and no panel may
// be resolved behind the operator's back.
func (tl reviewTally) check(t *testing.T, want map[reviewKey]int) {
	t.Helper()
	got := tl.counts()
	keys := slices.Collect(maps.Keys(want))
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if got[k] != want[k] {
			t.Errorf("%s reviews shown to conversation %s = %d, want %d", k.kind, k.conv, got[k], want[k])
		}
	}
	for id, rec := range tl.decided {
		if _, ok := tl.shown[id]; !ok {
			t.Errorf("review %s (%s) resolved without ever being on screen: %s by %s", id, rec.ReviewKind, rec.Decision, rec.By)
		}
		if rec.Decision != "approved" || rec.By != "operator" {
			t.Errorf("review %s (%s): %s by %s, want approved by operator", id, rec.ReviewKind, rec.Decision, rec.By)
		}
	}
	for id, rec := range tl.shown {
		if _, ok := tl.decided[id]; !ok {
			t.Errorf("review %s (%s) never resolved", id, rec.ReviewKind)
		}
	}
}

// profileOperator judges the reviews of a profile's journey: it checks
// what the fixtures have seen while each panel is on screen.
type profileOperator struct {
	r       *jRig
	convs   journeyConvs
	grant   consent.ReviewKind // KindThread or KindSession
	label   string             // the grant panel's key label (design.md §4)
	granted int                // grant panels of the agent's conversation so far
}

func (p *profileOperator) judge(rev consent.Review) bool {
	t := p.r.t
	site := p.r.world.site
	switch rev.Kind {
	case p.grant:
		if rev.ApproveLabel != p.label {
			t.Errorf("%s panel label %q, want %q", rev.Kind, rev.ApproveLabel, p.label)
		}
		if rev.Origin != site.URL {
			t.Errorf("%s panel for %s: the journey asks only on the fixture site", rev.Kind, rev.Origin)
		}
		switch rev.Conversation {
		case p.convs.agent:
			p.granted++
			switch p.granted {
			case 1:
				// browser_open's navigation: the tab is still about:blank.
				if rev.Gate != consent.GateNavigation {
					t.Errorf("the first %s panel came from the %s gate, want navigation (browser_open)", rev.Kind, rev.Gate)
				}
				if n := site.Total(); n != 0 {
					t.Errorf("%d requests reached the site before the first %s panel was approved", n, rev.Kind)
				}
			case 2:
				// The observe after resume: the take-over revoked the grant,
				// so reading the signed-in page asks again, and nothing the
				// grant would cover has run since.
				if rev.Gate != consent.GateRead {
					t.Errorf("the %s panel after resume came from the %s gate, want read (the observe)", rev.Kind, rev.Gate)
				}
				if n := countReq(site, "POST", "/signin"); n != 1 {
					t.Errorf("at the %s panel after resume the site saw %d sign-ins, want 1", rev.Kind, n)
				}
				if n := site.Count("/webmcp/tools.html"); n != 0 {
					t.Errorf("the drafts page was requested %d times before the renewed %s grant", n, rev.Kind)
				}
			default:
				t.Errorf("%s panel #%d for the agent's conversation (from the %s gate): one before the take-over and one after is all", rev.Kind, p.granted, rev.Gate)
			}
		case p.convs.policy:
			if rev.Gate != consent.GateNavigation {
				t.Errorf("the policy run's %s panel came from the %s gate, want navigation", rev.Kind, rev.Gate)
			}
			if n := site.Count("/uploads.html"); n != 0 {
				t.Errorf("the upload page was requested %d times before the policy run's %s panel was approved", n, rev.Kind)
			}
		default:
			t.Errorf("%s panel for conversation %s, which the journey never drives", rev.Kind, rev.Conversation)
		}
	case consent.KindToolCall:
		if rev.ToolCall == nil || rev.ToolCall.ToolName != "save_draft" || rev.ApproveLabel != "Allow once" {
			t.Errorf("tool-call review %+v", rev)
		}
		if n := saveRecords(site); n != 0 {
			t.Errorf("save_draft reached the server %d times before Allow once", n)
		}
	case consent.KindAction:
		if rev.Action == nil || rev.Action.Name != "Open popup" || rev.ApproveLabel != "Allow once" {
			t.Errorf("action review %+v", rev)
		}
		if n := site.Count("/link.html"); n != 0 {
			t.Errorf("/link.html requested %d times before the click was allowed", n)
		}
	case consent.KindDisclosure:
		if rev.ApproveLabel != "Share result" {
			t.Errorf("disclosure label %q", rev.ApproveLabel)
		}
		if n := saveRecords(site); n != 1 {
			t.Errorf("at Share result the callback had reached the server %d times, want 1", n)
		}
		if jHasActivity(p.r.eng.Snapshot(), "callback_returned") {
			t.Error("the agent heard the result before Share result")
		}
	default:
		// The exact counts fail the test too; denying stops the walk here,
		// where the panel that should not exist is on screen.
		t.Errorf("%s profile showed a %s review (gate %s, %s)", p.r.eng.Profile(), rev.Kind, rev.Gate, rev.Origin)
		return false
	}
	return true
}

// runProfileJourney walks §10 under profile and checks what is common to
// thread and trusted; want is the exact count of reviews shown per
// conversation and kind.
func runProfileJourney(t *testing.T, profile consent.Profile, grant consent.ReviewKind, label string, want func(journeyConvs) map[reviewKey]int) {
	r := startJourneyRigWith(t, profile)
	// The profile is on screen at all times (design.md §4).
	banner := "consent: " + strings.ToUpper(string(profile))
	teatest.WaitFor(t, r.tm.Output(), func(b []byte) bool { return strings.Contains(string(b), banner) }, teatest.WithDuration(10*time.Second))

	var p *profileOperator
	op, convs := walkJourney(t, r, func(c journeyConvs) func(consent.Review) bool {
		p = &profileOperator{r: r, convs: c, grant: grant, label: label}
		return p.judge
	})
	w := r.world
	site, second := w.site, w.second

	wantShown := want(convs)
	tallyReviews(r.log).check(t, wantShown)
	// The operator pressed a key for each panel, once.
	perKind := map[consent.ReviewKind]int{}
	for k, n := range wantShown {
		perKind[k.kind] += n
	}
	for _, kind := range slices.Collect(maps.Keys(perKind)) {
		if op.count[kind] != perKind[kind] {
			t.Errorf("%s reviews answered = %d, want %d", kind, op.count[kind], perKind[kind])
		}
	}

	// Witnesses at the end of the journey.
	if n := countReq(site, "POST", "/signin"); n != 1 {
		t.Errorf("sign-ins = %d, want 1", n)
	}
	if n := saveRecords(site); n != 1 {
		t.Errorf("save_draft records = %d, want 1", n)
	}
	if n := site.Count("/link.html"); n < 1 {
		t.Errorf("the popup never loaded /link.html")
	}
	for _, kind := range []string{"kind=post", "kind=put", "kind=beacon"} {
		if n := countQuery(site, "/record", kind); n != 0 {
			t.Errorf("policy run: %s reached the server %d times", kind, n)
		}
	}
	// The grant covers navigation to any origin, so the redirect hop is
	// followed without a panel: exactly the one document request, and the
	// policy run's blocked open of the same origin (its marked request)
	// never reached it.
	if n := countReq(second, "GET", "/index.html"); n != 1 {
		t.Errorf("the redirect target's page was requested %d times, want 1 (the followed hop)", n)
	}
	if n := countQuery(second, "/index.html", "from=policy-run"); n != 0 {
		t.Errorf("the policy run's blocked open reached the origin %d times", n)
	}
	for _, code := range []string{"sign_in_required", "stale_observation", "wrong_conversation", "website_blocked", "tab_closed"} {
		if !r.auditHasCode(code) {
			t.Errorf("no tool call ended with %s", code)
		}
	}
	if r.auditHasCode("user_denied") {
		t.Error("a tool call ended with user_denied: the operator denied nothing")
	}

	r.tm.Send(jPress("q"))
	teatest.WaitFor(t, r.tm.Output(), func(b []byte) bool { return strings.Contains(string(b), "(y/n)") }, teatest.WithDuration(5*time.Second))
	r.tm.Send(jPress("y"))
	r.tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
}

// TestJourneyThreadProfile: 3 thread panels (the open, the observe after
// the take-over revoked the grant, the policy run's open), "Allow once" for
// the site-tool call and for the DOM click, one "Share result"; no
// navigation or read panel at all.
func TestJourneyThreadProfile(t *testing.T) {
	runProfileJourney(t, consent.ProfileThread, consent.KindThread, "Allow browser control for this thread",
		func(c journeyConvs) map[reviewKey]int {
			return map[reviewKey]int{
				{c.agent, consent.KindThread}:     2,
				{c.policy, consent.KindThread}:    1,
				{c.agent, consent.KindToolCall}:   1,
				{c.agent, consent.KindAction}:     1,
				{c.agent, consent.KindDisclosure}: 1,
			}
		})
}

// TestJourneyTrustedProfile: 3 session panels (same three moments as
// thread), and the one "Share result" that no profile skips; the site-tool
// call and the click run unprompted.
func TestJourneyTrustedProfile(t *testing.T) {
	runProfileJourney(t, consent.ProfileTrusted, consent.KindSession, "Allow for this session",
		func(c journeyConvs) map[reviewKey]int {
			return map[reviewKey]int{
				{c.agent, consent.KindSession}:    2,
				{c.policy, consent.KindSession}:   1,
				{c.agent, consent.KindDisclosure}: 1,
			}
		})
}
