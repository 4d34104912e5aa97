package consent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// scopedHarness is a strict engine on a fake clock with c1 (tabs t1, t2)
// and c2 (tab t3).
func scopedHarness(t *testing.T, cfg Config) (*harness, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	cfg.Now, cfg.AfterFunc = clk.Now, clk.AfterFunc
	return newHarness(t, cfg).std(), clk
}

// press waits out the key-ahead guard on the real clock (the guard's
// clock) and answers r with s (scoped) or a.
func (h *harness) press(r Review, scoped bool) error {
	h.t.Helper()
	time.Sleep(h.cfg.ReviewDelay + 5*time.Millisecond)
	return h.e.DecideAs(Decision{Review: r.ID, Approve: true, Scoped: scoped, By: Operator{Name: "ana", Fingerprint: "SHA256:x"}})
}

// answer is decide on the real clock (the guard's), for a fake-clock engine.
func (h *harness) answer(r Review, approve bool) {
	h.t.Helper()
	time.Sleep(h.cfg.ReviewDelay + 5*time.Millisecond)
	if err := h.e.Decide(r.ID, approve); err != nil {
		h.t.Fatalf("Decide(%s): %v", r.ID, err)
	}
}

// askPass runs req and returns its Pass and error.
func askPass(e *Engine, req Request) <-chan passErr {
	ch := make(chan passErr, 1)
	go func() {
		p, err := e.AskGrant(context.Background(), req)
		ch <- passErr{p, err}
	}()
	return ch
}

type passErr struct {
	p   Pass
	err error
}

func passOf(t *testing.T, ch <-chan passErr) passErr {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitLimit):
		t.Fatal("AskGrant did not return")
		return passErr{}
	}
}

// grantWith answers req's review with s and returns the grant's id.
func (h *harness) grantWith(req Request) string {
	h.t.Helper()
	ch := askPass(h.e, req)
	if err := h.press(h.focused(req.Tab), true); err != nil {
		h.t.Fatalf("s: %v", err)
	}
	r := passOf(h.t, ch)
	if r.err != nil || r.p.Grant == "" {
		h.t.Fatalf("s: pass %+v err %v", r.p, r.err)
	}
	return r.p.Grant
}

// coveredNow asks req and reports whether it passed without a review
// (and under which grant); a review that comes up is denied.
func (h *harness) coveredNow(req Request) (string, bool) {
	h.t.Helper()
	ch := askPass(h.e, req)
	deadline := time.After(waitLimit)
	for {
		select {
		case r := <-ch:
			if r.err != nil {
				h.t.Fatalf("covered step failed: %v", r.err)
			}
			return r.p.Grant, true
		case <-h.ch:
			if st := h.e.Snapshot(); st.Focused != nil && st.Focused.Tab == req.Tab {
				h.answer(*st.Focused, false)
				wantCode(h.t, passOf(h.t, ch).err, errcode.UserDenied)
				return "", false
			}
		case <-deadline:
			h.t.Fatal("neither covered nor asked")
		}
	}
}

func click(conv ConversationID, tab TabID, origin string) Request {
	return Request{Gate: GateAction, Conversation: conv, Tab: tab, Origin: origin, Action: &Action{Type: ActionClick, Ref: "e1", Role: "button", Name: "Next"}}
}

func fill(conv ConversationID, tab TabID, origin string, a Action) Request {
	a.Type = ActionFill
	return Request{Gate: GateAction, Conversation: conv, Tab: tab, Origin: origin, Action: &a}
}

func TestScopedGrantCoversOnlyItsClassOriginAndConversation(t *testing.T) {
	h, _ := scopedHarness(t, Config{})
	h.e.PutTab(TabInfo{ID: "t4", Conversation: "c1", URL: "about:blank"})
	id := h.grantWith(click("c1", "t1", "https://shop.test"))

	// The same class on the same origin in the same conversation, in
	// another of its tabs too: no review, the pass names the grant.
	for _, tab := range []TabID{"t1", "t2"} {
		if got, ok := h.coveredNow(click("c1", tab, "https://SHOP.test:443")); !ok || got != id {
			t.Fatalf("click in %s: covered=%v grant=%q, want %s", tab, ok, got, id)
		}
	}
	// Another class, origin, port or conversation asks.
	h.e.Select("c1", "t2")
	for name, req := range map[string]Request{
		"fill":         fill("c1", "t2", "https://shop.test", Action{Ref: "e2", Name: "Search"}),
		"scroll":       {Gate: GateAction, Conversation: "c1", Tab: "t2", Origin: "https://shop.test", Action: &Action{Type: ActionScroll, DeltaY: 300}},
		"other origin": click("c1", "t2", "https://other.test"),
		"other port":   click("c1", "t2", "https://shop.test:8443"),
		"other scheme": click("c1", "t2", "http://shop.test"),
	} {
		if _, ok := h.coveredNow(req); ok {
			t.Fatalf("%s ran under the click grant", name)
		}
	}
	h.e.Select("c2", "t3")
	if _, ok := h.coveredNow(click("c2", "t3", "https://shop.test")); ok {
		t.Fatal("another conversation's click ran under c1's grant")
	}

	st := h.e.Snapshot()
	if len(st.Grants) != 1 || st.Grants[0].ID != id || st.Grants[0].Uses != 3 || st.Grants[0].Class != ClassClick || st.Grants[0].By.Name != "ana" {
		t.Fatalf("grants list: %+v", st.Grants)
	}
	if cs := st.Conversations[0]; len(cs.Scoped) != 1 || cs.Scoped[0].ID != id {
		t.Fatalf("c1's chips: %+v", cs.Scoped)
	}
	if got := st.Grants[0].Expires.Sub(st.Now); got != DefaultGrantWindow {
		t.Fatalf("remaining %s, want %s", got, DefaultGrantWindow)
	}
	// Audited: the grant with who gave it, each covered step with its id.
	given := h.mem.Kind(audit.KindGrant)
	if len(given) != 1 || given[0].Grant != id || given[0].Operator != "ana" || given[0].KeyFingerprint != "SHA256:x" {
		t.Fatalf("grant records: %+v", given)
	}
	uses := h.mem.Kind(audit.KindGrantUse)
	if len(uses) != 2 || uses[0].Grant != id || uses[0].Action != "click" || uses[0].Origin != "https://shop.test" {
		t.Fatalf("grant_use records: %+v", uses)
	}
	if !activityHas(st, "grant "+id+" covered: action click https://shop.test (tab t2)") {
		t.Fatalf("activity lacks the covered step: %+v", st.Activity)
	}
}

func activityHas(st State, text string) bool {
	for _, a := range st.Activity {
		if strings.Contains(a.Text, text) {
			return true
		}
	}
	return false
}

func TestScopedOfferSaysWhatSWouldCover(t *testing.T) {
	h, _ := scopedHarness(t, Config{GrantWindow: 10 * time.Minute})
	ch := askPass(h.e, click("c1", "t1", "https://xn--bcher-kva.test"))
	r := h.focused("t1")
	if r.Scope == nil || r.Scope.Refused || r.Scope.Class != ClassClick ||
		r.Scope.Text != "every click on https://bücher.test in this conversation, for 10 min" {
		t.Fatalf("offer: %+v", r.Scope)
	}
	h.answer(r, false)
	passOf(t, ch)

	ch = askPass(h.e, read("c1", "t1", "https://a.test"))
	r = h.focused("t1")
	if r.Scope == nil || r.Scope.Class != ClassRead || !strings.HasPrefix(r.Scope.Text, "reading on https://a.test") {
		t.Fatalf("read offer: %+v", r.Scope)
	}
	h.answer(r, false)
	passOf(t, ch)

	ch = askPass(h.e, nav("c1", "t1", "https://a.test"))
	if r = h.focused("t1"); r.Scope != nil {
		t.Fatalf("navigation panel offers s: %+v", r.Scope)
	}
	h.answer(r, false)
	passOf(t, ch)
}

func TestNeverGrantableStepsAlwaysAsk(t *testing.T) {
	h, _ := scopedHarness(t, Config{})
	o := "https://shop.test"
	cases := map[string]struct {
		req  Request
		want string
	}{
		"upload":          {Request{Gate: GateAction, Conversation: "c1", Tab: "t1", Origin: o, Upload: &Upload{Filename: "a.pdf", Size: 3, SHA256: "ab"}}, "uploads always ask"},
		"plan":            {Request{Gate: GateAction, Conversation: "c1", Tab: "t1", Origin: o, Plan: []Action{{Type: ActionClick, Ref: "e1"}}}, "batch plans always ask"},
		"cc autocomplete": {fill("c1", "t1", o, Action{Ref: "e3", Name: "Number", Autocomplete: "cc-number"}), "payment or identity"},
		"cvc by name":     {fill("c1", "t1", o, Action{Ref: "e3", Name: "CVC"}), "payment or identity"},
		"iban by field":   {fill("c1", "t1", o, Action{Ref: "e3", Name: "Account", Field: "iban"}), "payment or identity"},
		"otc":             {fill("c1", "t1", o, Action{Ref: "e3", Name: "Code", Autocomplete: "one-time-code"}), "payment or identity"},
		"new password":    {fill("c1", "t1", o, Action{Ref: "e3", Name: "Choose", Autocomplete: "section-a new-password"}), "payment or identity"},
		"expiry select": {Request{Gate: GateAction, Conversation: "c1", Tab: "t1", Origin: o,
			Action: &Action{Type: ActionSelect, Ref: "e4", Name: "Expiry month", Value: "03"}}, "payment or identity"},
		"cross-origin link": {Request{Gate: GateAction, Conversation: "c1", Tab: "t1", Origin: o,
			Action: &Action{Type: ActionClick, Ref: "e5", Role: "link", Name: "Partner", CrossOrigin: true}}, "cross-origin steps always ask"},
	}
	for name, c := range cases {
		ch := askPass(h.e, c.req)
		r := h.focused("t1")
		if r.Scope == nil || !r.Scope.Refused || !strings.Contains(r.Scope.Text, c.want) {
			t.Fatalf("%s: offer %+v, want refused %q", name, r.Scope, c.want)
		}
		err := h.press(r, true)
		var ng *NotGrantableError
		if !errors.As(err, &ng) || !strings.Contains(err.Error(), c.want) || !strings.HasSuffix(err.Error(), "; a allows once") {
			t.Fatalf("%s: s gave %v", name, err)
		}
		// Nothing was decided: the review is still on screen; a allows once.
		if st := h.e.Snapshot(); st.Focused == nil || st.Focused.ID != r.ID {
			t.Fatalf("%s: s on a never-grantable step resolved the review", name)
		}
		if err := h.e.Decide(r.ID, true); err != nil {
			t.Fatalf("%s: a: %v", name, err)
		}
		if res := passOf(t, ch); res.err != nil || res.p.Grant != "" {
			t.Fatalf("%s: a gave %+v %v", name, res.p, res.err)
		}
		// And the same step asks again: a never became a grant.
		if _, ok := h.coveredNow(c.req); ok {
			t.Fatalf("%s: ran without a review after a", name)
		}
	}
	if n := len(h.mem.Kind(audit.KindGrant)); n != 0 {
		t.Fatalf("%d grants given for never-grantable steps", n)
	}
	// A plain fill is grantable, and that grant does not reach a card field.
	id := h.grantWith(fill("c1", "t1", o, Action{Ref: "e6", Name: "Street"}))
	if got, ok := h.coveredNow(fill("c1", "t1", o, Action{Ref: "e7", Name: "City"})); !ok || got != id {
		t.Fatal("fill grant does not cover an ordinary field")
	}
	if _, ok := h.coveredNow(cases["cc autocomplete"].req); ok {
		t.Fatal("fill grant covered a card number")
	}
}

func TestScopedGrantEndsWithItsWindow(t *testing.T) {
	h, clk := scopedHarness(t, Config{GrantWindow: 5 * time.Minute})
	id := h.grantWith(click("c1", "t1", "https://shop.test"))
	clk.Advance(5*time.Minute - time.Second)
	if got, ok := h.coveredNow(click("c1", "t1", "https://shop.test")); !ok || got != id {
		t.Fatal("a step a second before the end was not covered")
	}
	clk.Advance(2 * time.Second) // one second after the end
	if _, ok := h.coveredNow(click("c1", "t1", "https://shop.test")); ok {
		t.Fatal("a step one second after the window ran under the grant")
	}
	if st := h.e.Snapshot(); len(st.Grants) != 0 {
		t.Fatalf("expired grant still listed: %+v", st.Grants)
	}
	if ex := h.mem.Kind(audit.KindGrantExpired); len(ex) != 1 || ex[0].Grant != id {
		t.Fatalf("expiry records: %+v", ex)
	}
}

// A grant is checked against the clock, not only ended by its timer: a
// late timer cannot stretch it.
func TestScopedGrantExpiresWithoutItsTimer(t *testing.T) {
	clk := newFakeClock()
	h := newHarness(t, Config{Now: clk.Now, AfterFunc: func(time.Duration, func()) func() bool { return func() bool { return true } }, GrantWindow: time.Minute}).std()
	h.grantWith(click("c1", "t1", "https://shop.test"))
	clk.mu.Lock()
	clk.now = clk.now.Add(time.Minute + time.Second)
	clk.mu.Unlock()
	if _, ok := h.coveredNow(click("c1", "t1", "https://shop.test")); ok {
		t.Fatal("a step after the window ran under the grant")
	}
}

func TestScopedGrantRevocations(t *testing.T) {
	revokes := map[string]func(h *harness, id string){
		"take-over": func(h *harness, _ string) {
			if err := h.e.TakeOver("c1"); err != nil {
				h.t.Fatal(err)
			}
			if err := h.e.Resume("c1"); err != nil {
				h.t.Fatal(err)
			}
		},
		"cancel x": func(h *harness, _ string) {
			if err := h.e.Cancel("c1"); err != nil {
				h.t.Fatal(err)
			}
		},
		"tab close": func(h *harness, _ string) { h.e.RemoveTab("t1") },
		"policy reload": func(h *harness, _ string) {
			h.e.SetGrantLimits(GrantLimits{})
		},
		"operator G": func(h *harness, id string) {
			if err := h.e.RevokeGrant(id, Operator{Name: "bo", Fingerprint: "SHA256:y"}); err != nil {
				h.t.Fatal(err)
			}
			if err := h.e.RevokeGrant(id, LocalOperator); !errors.Is(err, ErrNoSuchGrant) {
				h.t.Fatalf("second revoke: %v", err)
			}
		},
	}
	for name, revoke := range revokes {
		t.Run(name, func(t *testing.T) {
			h, _ := scopedHarness(t, Config{})
			h.t = t
			id := h.grantWith(click("c1", "t1", "https://shop.test"))
			revoke(h, id)
			if st := h.e.Snapshot(); len(st.Grants) != 0 {
				t.Fatalf("grant outlived %s: %+v", name, st.Grants)
			}
			rv := h.mem.Kind(audit.KindGrantRevoked)
			if len(rv) != 1 || rv[0].Grant != id {
				t.Fatalf("revoke records: %+v", rv)
			}
			if name == "operator G" && (rv[0].Operator != "bo" || rv[0].KeyFingerprint != "SHA256:y") {
				t.Fatalf("revocation not attributed: %+v", rv[0])
			}
			tab := TabID("t1")
			if name == "tab close" {
				tab = "t2"
				h.e.Select("c1", "t2")
			}
			if _, ok := h.coveredNow(click("c1", tab, "https://shop.test")); ok {
				t.Fatalf("a click ran under the grant after %s", name)
			}
		})
	}
	t.Run("conversation end", func(t *testing.T) {
		h, _ := scopedHarness(t, Config{})
		id := h.grantWith(click("c1", "t1", "https://shop.test"))
		h.e.EndConversation("c1", "agent token revoked")
		h.e.AddConversation("c1", "one again")
		h.e.PutTab(TabInfo{ID: "t9", Conversation: "c1", URL: "about:blank"})
		h.e.Select("c1", "t9")
		if st := h.e.Snapshot(); len(st.Grants) != 0 {
			t.Fatalf("grant outlived its conversation: %+v", st.Grants)
		}
		if rv := h.mem.Kind(audit.KindGrantRevoked); len(rv) != 1 || rv[0].Grant != id {
			t.Fatalf("revoke records: %+v", rv)
		}
		if _, ok := h.coveredNow(click("c1", "t9", "https://shop.test")); ok {
			t.Fatal("a click ran under an ended conversation's grant")
		}
	})
}

func TestScopedGrantsUnderPolicy(t *testing.T) {
	t.Run("off", func(t *testing.T) {
		h, _ := scopedHarness(t, Config{GrantLimits: GrantLimits{Grantable: []GrantClass{}}})
		ch := askPass(h.e, click("c1", "t1", "https://shop.test"))
		r := h.focused("t1")
		err := h.press(r, true)
		if err == nil || err.Error() != "s refused: managed policy turns scoped grants off (execution.grantable: []); a allows once" {
			t.Fatalf("s under grantable: [] gave %v", err)
		}
		if st := h.e.Snapshot(); !activityHas(st, "s refused: managed policy turns scoped grants off") {
			t.Fatal("the refusal is not in the activity log")
		}
		if err := h.e.Decide(r.ID, true); err != nil {
			t.Fatal(err)
		}
		passOf(t, ch)
	})
	t.Run("classes and cap", func(t *testing.T) {
		h, _ := scopedHarness(t, Config{GrantWindow: time.Hour, GrantLimits: GrantLimits{MaxWindow: 20 * time.Minute, Grantable: []GrantClass{ClassClick, ClassSiteTools}}})
		ch := askPass(h.e, fill("c1", "t1", "https://shop.test", Action{Ref: "e1", Name: "Street"}))
		r := h.focused("t1")
		if r.Scope == nil || !r.Scope.Refused || !strings.Contains(r.Scope.Text, "does not let fill be granted") {
			t.Fatalf("fill offer under policy: %+v", r.Scope)
		}
		h.answer(r, false)
		passOf(t, ch)
		h.grantWith(click("c1", "t1", "https://shop.test"))
		st := h.e.Snapshot()
		if got := st.Grants[0].Expires.Sub(st.Now); got != 20*time.Minute {
			t.Fatalf("window %s, want the policy's 20m cap", got)
		}
		tool := Request{Gate: GateAction, Conversation: "c1", Tab: "t1", Origin: "https://shop.test", ToolCall: &ToolCall{ToolName: "save_draft"}}
		id := h.grantWith(tool)
		if got, ok := h.coveredNow(tool); !ok || got != id {
			t.Fatal("site tool grant does not cover its tool")
		}
		other := tool
		other.ToolCall = &ToolCall{ToolName: "delete_all"}
		if _, ok := h.coveredNow(other); ok {
			t.Fatal("one site tool's grant covered another tool")
		}
	})
}

func TestScopedKeyAheadGuard(t *testing.T) {
	h, _ := scopedHarness(t, Config{ReviewDelay: tGuard})
	ch := askPass(h.e, click("c1", "t1", "https://shop.test"))
	r := h.focused("t1")
	if err := h.e.DecideAs(Decision{Review: r.ID, Approve: true, Scoped: true}); !errors.Is(err, ErrTooEarly) {
		t.Fatalf("s at once: %v, want ErrTooEarly", err)
	}
	if st := h.e.Snapshot(); len(st.Grants) != 0 || st.Focused == nil {
		t.Fatal("an early s decided or granted")
	}
	h.answer(r, false)
	passOf(t, ch)
}

// A review waiting behind the one answered with s is let through by the
// new grant when the grant covers it, and named as such.
func TestScopedGrantApprovesCoveredQueuedReviews(t *testing.T) {
	h, _ := scopedHarness(t, Config{})
	first := askPass(h.e, click("c1", "t1", "https://shop.test"))
	r := h.focused("t1")
	second := askPass(h.e, click("c1", "t2", "https://shop.test"))
	h.queued(2)
	if err := h.press(r, true); err != nil {
		t.Fatal(err)
	}
	a, b := passOf(t, first), passOf(t, second)
	if a.err != nil || b.err != nil || a.p.Grant == "" || b.p.Grant != a.p.Grant {
		t.Fatalf("first %+v %v, second %+v %v", a.p, a.err, b.p, b.err)
	}
	if st := h.e.Snapshot(); st.Grants[0].Uses != 2 {
		t.Fatalf("uses %d, want 2", st.Grants[0].Uses)
	}
}

// A recheck failure under a grant fails the step undispatched, like after
// an approval.
func TestScopedGrantRunsTheRecheck(t *testing.T) {
	h, _ := scopedHarness(t, Config{})
	h.grantWith(click("c1", "t1", "https://shop.test"))
	req := click("c1", "t1", "https://shop.test")
	req.Recheck = func() error {
		return errcode.Errorf(errcode.PageChanged, errcode.NextObserveBeforeRetry, "moved")
	}
	_, err := h.e.AskGrant(context.Background(), req)
	wantCode(t, err, errcode.PageChanged)
}

// s on a navigation review names what a does there (for the tab, not
// once), as the walk read "a allows once" on a panel whose a is "Allow
// origin in this tab".
func TestScopedRefusalNamesThePanelsA(t *testing.T) {
	h := newHarness(t, Config{}).std()
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	r := h.focused("t1")
	time.Sleep(time.Until(r.ShownAt.Add(h.e.Snapshot().ReviewDelay + time.Millisecond)))
	err := h.e.DecideAs(Decision{Review: r.ID, Approve: true, Scoped: true})
	var ng *NotGrantableError
	if !errors.As(err, &ng) || !strings.HasSuffix(err.Error(), "; a: Allow origin in this tab") {
		t.Fatalf("s on a navigation review: %v", err)
	}
	h.decide(r, false)
	wantCode(t, result(t, ch), errcode.UserDenied)
}
