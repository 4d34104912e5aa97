package consent

import (
	"context"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

func TestEffectiveProfileIsStricterOfProfileAndFloor(t *testing.T) {
	cases := []struct {
		profile, floor, want Profile
	}{
		{"", "", ProfileStrict},
		{"bogus", "", ProfileStrict},
		{ProfileStrict, "", ProfileStrict},
		{ProfileThread, "", ProfileThread},
		{ProfileTrusted, "", ProfileTrusted},
		{ProfileTrusted, ProfileStrict, ProfileStrict},
		{ProfileTrusted, ProfileThread, ProfileThread},
		{ProfileThread, ProfileTrusted, ProfileThread},
		{ProfileStrict, ProfileTrusted, ProfileStrict},
		{ProfileTrusted, "bogus", ProfileStrict},
	}
	for _, c := range cases {
		e := New(Config{Profile: c.profile, Floor: c.floor})
		if got := e.Profile(); got != c.want {
			t.Errorf("Profile %q Floor %q: got %q, want %q", c.profile, c.floor, got, c.want)
		}
		if got := e.Snapshot().Profile; got != c.want {
			t.Errorf("snapshot profile %q, want %q", got, c.want)
		}
		e.Close()
	}
}

func TestStrictGrantsAreNarrowAndActionsAreOneUse(t *testing.T) {
	h := newHarness(t, Config{Profile: ProfileStrict}).std()
	e := h.e

	ch := ask(e, context.Background(), nav("c1", "t1", "https://a.test"))
	r := h.focused("t1")
	if r.Kind != KindNavigation || r.ApproveLabel != "Allow origin in this tab" || r.Title != "Allow website navigation?" {
		t.Fatalf("navigation panel: %+v", r)
	}
	h.decide(r, true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	if !e.Covered(nav("c1", "t1", "https://a.test")) {
		t.Fatal("navigation grant not recorded")
	}
	if e.Covered(read("c1", "t1", "https://a.test")) {
		t.Fatal("navigation must not imply read")
	}
	if e.Covered(act("c1", "t1", ActionScroll)) {
		t.Fatal("navigation must not imply an action")
	}

	if err := h.approveAsk(read("c1", "t1", "https://a.test")); err != nil {
		t.Fatal(err)
	}
	if !e.Covered(read("c1", "t2", "https://a.test")) {
		t.Fatal("a read grant covers the origin in every tab of the conversation")
	}

	click := act("c1", "t1", ActionClick)
	ch = ask(e, context.Background(), click)
	r = h.focused("t1")
	if r.Kind != KindAction || r.ApproveLabel != "Allow once" {
		t.Fatalf("action panel: %+v", r)
	}
	h.decide(r, true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	if e.Covered(click) {
		t.Fatal("an action approval must never become a grant")
	}
	ch = ask(e, context.Background(), click)
	if got := h.focused("t1"); got.ID == r.ID || got.Kind != KindAction {
		t.Fatalf("second click must ask again: %+v", got)
	}
	h.decide(h.focused("t1"), false)
	wantCode(t, result(t, ch), errcode.UserDenied)

	d := disclose("c1", "t1", `{"ok":true}`)
	if err := h.approveAsk(d); err != nil {
		t.Fatal(err)
	}
	if e.Covered(d) {
		t.Fatal("a disclosure must never become a grant")
	}
	if g := e.Snapshot().Conversations[0].Grants; len(g) != 2 ||
		g[0] != "navigation https://a.test in tab t1" || g[1] != "read https://a.test" {
		t.Fatalf("grants %q", g)
	}
}

func TestThreadGrantCoversNavigationReadScrollOnly(t *testing.T) {
	h := newHarness(t, Config{Profile: ProfileThread}).std()
	e := h.e

	ch := ask(e, context.Background(), read("c1", "t1", "https://a.test"))
	r := h.focused("t1")
	if r.Kind != KindThread || r.ApproveLabel != "Allow browser control for this thread" {
		t.Fatalf("thread panel: %+v", r)
	}
	h.decide(r, true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	for _, req := range []Request{
		nav("c1", "t1", "https://a.test"),
		nav("c1", "t2", "https://b.test"),
		read("c1", "t2", "https://c.test"),
		act("c1", "t2", ActionScroll),
	} {
		if !e.Covered(req) {
			t.Errorf("thread grant should cover %+v", req)
		}
	}
	for _, req := range []Request{
		act("c1", "t1", ActionClick),
		act("c1", "t1", ActionFill),
		{Gate: GateAction, Conversation: "c1", Tab: "t1", Origin: "https://a.test", Plan: []Action{{Type: ActionScroll}}},
		{Gate: GateAction, Conversation: "c1", Tab: "t1", Origin: "https://a.test", Upload: &Upload{Filename: "f"}},
		{Gate: GateAction, Conversation: "c1", Tab: "t1", Origin: "https://a.test", ToolCall: &ToolCall{ToolName: "x"}},
		disclose("c1", "t1", "{}"),
		nav("c2", "t3", "https://a.test"),
	} {
		if e.Covered(req) {
			t.Errorf("thread grant must not cover %+v", req)
		}
	}

	plan := Request{Gate: GateAction, Conversation: "c1", Tab: "t1", Origin: "https://a.test",
		Plan: []Action{{Type: ActionClick}, {Type: ActionFill, Text: "x"}}}
	ch = ask(e, context.Background(), plan)
	r = h.focused("t1")
	if r.Kind != KindPlan || r.ApproveLabel != "Allow these 2 actions" {
		t.Fatalf("plan panel: %+v", r)
	}
	h.decide(r, true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	if g := e.Snapshot().Conversations[0].Grants; len(g) != 1 || g[0] != "thread control" {
		t.Fatalf("grants %q", g)
	}
}

func TestThreadFirstScrollAsksForThread(t *testing.T) {
	h := newHarness(t, Config{Profile: ProfileThread}).std()
	ch := ask(h.e, context.Background(), act("c1", "t1", ActionScroll))
	if r := h.focused("t1"); r.Kind != KindThread {
		t.Fatalf("first scroll in thread profile shows %s", r.Kind)
	}
	h.decide(h.focused("t1"), true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	// A click before any thread grant asks "Allow once", not the thread panel.
	h2 := newHarness(t, Config{Profile: ProfileThread}).std()
	ch = ask(h2.e, context.Background(), act("c1", "t1", ActionClick))
	if r := h2.focused("t1"); r.Kind != KindAction {
		t.Fatalf("click in thread profile shows %s", r.Kind)
	}
	h2.decide(h2.focused("t1"), true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	if h2.e.Covered(nav("c1", "t1", "https://a.test")) {
		t.Fatal("an action approval must not create the thread grant")
	}
}

func TestTrustedSessionCoversAllButDisclosure(t *testing.T) {
	h := newHarness(t, Config{Profile: ProfileTrusted}).std()
	e := h.e
	ch := ask(e, context.Background(), act("c1", "t1", ActionClick))
	r := h.focused("t1")
	if r.Kind != KindSession || r.ApproveLabel != "Allow for this session" {
		t.Fatalf("session panel: %+v", r)
	}
	h.decide(r, true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	for _, req := range []Request{
		nav("c1", "t2", "https://b.test"),
		read("c1", "t1", "https://b.test"),
		act("c1", "t1", ActionFill),
		{Gate: GateAction, Conversation: "c1", Tab: "t1", Origin: "https://a.test", Plan: []Action{{Type: ActionClick}}},
		{Gate: GateAction, Conversation: "c1", Tab: "t1", Origin: "https://a.test", Upload: &Upload{Filename: "f"}},
		{Gate: GateAction, Conversation: "c1", Tab: "t1", Origin: "https://a.test", ToolCall: &ToolCall{ToolName: "x"}},
	} {
		if err := e.Ask(context.Background(), req); err != nil {
			t.Errorf("session should cover %+v: %v", req, err)
		}
	}
	if e.Covered(nav("c2", "t3", "https://a.test")) {
		t.Fatal("a session grant is per conversation")
	}
	d := disclose("c1", "t1", "{}")
	if e.Covered(d) {
		t.Fatal("disclosure must ask in trusted profile")
	}
	ch = ask(e, context.Background(), d)
	if r := h.focused("t1"); r.Kind != KindDisclosure || r.ApproveLabel != "Share result" {
		t.Fatalf("disclosure panel: %+v", r)
	}
	h.decide(h.focused("t1"), true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
}

func TestPolicyFloorCapsTrusted(t *testing.T) {
	h := newHarness(t, Config{Profile: ProfileTrusted, Floor: ProfileStrict}).std()
	ch := ask(h.e, context.Background(), act("c1", "t1", ActionClick))
	if r := h.focused("t1"); r.Kind != KindAction {
		t.Fatalf("floor strict must show Allow once, got %s", r.Kind)
	}
	h.decide(h.focused("t1"), true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	if h.e.Covered(act("c1", "t1", ActionClick)) {
		t.Fatal("floor strict: no session grant")
	}

	h2 := newHarness(t, Config{Profile: ProfileTrusted, Floor: ProfileThread}).std()
	ch = ask(h2.e, context.Background(), read("c1", "t1", "https://a.test"))
	if r := h2.focused("t1"); r.Kind != KindThread {
		t.Fatalf("floor thread must show the thread panel, got %s", r.Kind)
	}
	h2.decide(h2.focused("t1"), true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	if h2.e.Covered(act("c1", "t1", ActionClick)) {
		t.Fatal("floor thread: a click must still ask")
	}
}

func TestPanelTextAndOrigins(t *testing.T) {
	cases := []struct {
		req         Request
		kind        ReviewKind
		title, lbl  string
		consequence string
	}{
		{nav("c1", "t1", "https://a.test"), KindNavigation, "Allow website navigation?", "Allow origin in this tab",
			"The tab may load this origin. Reading and actions still ask."},
		{read("c1", "t1", "https://a.test"), KindRead, "Allow reading this website?", "Allow reading this origin", ""},
		{act("c1", "t1", ActionKey), KindAction, "", "Allow once", ""},
		{Request{Gate: GateAction, Upload: &Upload{}}, KindUpload, "", "Allow once", ""},
		{Request{Gate: GateAction, ToolCall: &ToolCall{}}, KindToolCall, "", "Allow once", ""},
		{Request{Gate: GateAction, Plan: make([]Action, 3)}, KindPlan, "Allow these 3 actions?", "Allow these 3 actions", ""},
		{disclose("c1", "t1", "{}"), KindDisclosure, "", "Share result", ""},
	}
	for _, c := range cases {
		k, err := baseKind(c.req)
		if err != nil || k != c.kind {
			t.Fatalf("baseKind(%+v) = %s, %v; want %s", c.req, k, err, c.kind)
		}
		title, lbl, cons := panelText(k, c.req)
		if (c.title != "" && title != c.title) || lbl != c.lbl || cons == "" ||
			(c.consequence != "" && cons != c.consequence) {
			t.Errorf("%s: %q %q %q", k, title, lbl, cons)
		}
	}
	if _, err := baseKind(Request{Gate: GateAction}); err == nil {
		t.Error("an action request without details must be rejected")
	}

	h := newHarness(t, Config{}).std()
	req := nav("c1", "t1", "https://XN--bcher-kva.test:443/path?q")
	req.Consequence = "The tab loads the shop."
	ch := ask(h.e, context.Background(), req)
	r := h.focused("t1")
	if r.Origin != "https://xn--bcher-kva.test" || r.OriginUnicode != "https://bücher.test" {
		t.Fatalf("origin %q unicode %q", r.Origin, r.OriginUnicode)
	}
	if r.Consequence != "The tab loads the shop." {
		t.Fatalf("caller consequence replaced: %q", r.Consequence)
	}
	h.decide(r, false)
	wantCode(t, result(t, ch), errcode.UserDenied)
	if got := unicodeOrigin("https://a.test:8443"); got != "https://a.test:8443" {
		t.Fatalf("plain origin changed: %q", got)
	}
	wantCode(t, h.e.Ask(context.Background(), nav("c1", "t1", "not a url")), errcode.InvalidURL)
}

// x revokes navigation consent (design.md §4); in the thread and trusted
// profiles the grant that carries navigation goes with it, as on a
// take-over: the next navigation asks again (the twelfth walk saw an open
// load with no review after "navigation consent revoked").
func TestCancelRevokesTheThreadAndSessionGrants(t *testing.T) {
	for _, tc := range []struct {
		profile Profile
		kind    ReviewKind
		first   Request
		line    string
	}{
		{ProfileThread, KindThread, read("c1", "t1", "https://a.test"), "navigation consent and the thread grant revoked"},
		{ProfileTrusted, KindSession, act("c1", "t1", ActionClick), "navigation consent and the session grant revoked"},
	} {
		t.Run(string(tc.profile), func(t *testing.T) {
			h := newHarness(t, Config{Profile: tc.profile}).std()
			ch := ask(h.e, context.Background(), tc.first)
			if r := h.focused("t1"); r.Kind != tc.kind {
				t.Fatalf("first review %s, want %s", r.Kind, tc.kind)
			}
			h.decide(h.focused("t1"), true)
			if err := result(t, ch); err != nil {
				t.Fatal(err)
			}
			if !h.e.Covered(nav("c1", "t2", "https://a.test")) {
				t.Fatal("the grant does not cover a navigation before x")
			}
			if err := h.e.Cancel("c1"); err != nil {
				t.Fatal(err)
			}
			defer func() {
				// A take-over says the same of the grant it revokes.
				ch := ask(h.e, context.Background(), nav("c1", "t2", "https://a.test"))
				h.decide(h.focused("t2"), true)
				if err := result(t, ch); err != nil {
					t.Fatal(err)
				}
				if err := h.e.TakeOver("c1"); err != nil {
					t.Fatal(err)
				}
				act := h.e.Snapshot().Activity
				if last := act[len(act)-1].Text; !strings.Contains(last, "paused; "+tc.line) {
					t.Errorf("take-over activity %q lacks %q", last, tc.line)
				}
			}()
			if h.e.Covered(nav("c1", "t2", "https://a.test")) {
				t.Fatal("a navigation is still covered after x")
			}
			act := h.e.Snapshot().Activity
			if last := act[len(act)-1].Text; !strings.Contains(last, tc.line) {
				t.Errorf("activity %q lacks %q", last, tc.line)
			}
			ch = ask(h.e, context.Background(), nav("c1", "t2", "https://a.test"))
			if r := h.focused("t2"); r.Kind != tc.kind {
				t.Fatalf("the navigation after x shows %s, want %s asked again", r.Kind, tc.kind)
			}
			h.decide(h.focused("t2"), false)
			wantCode(t, result(t, ch), errcode.UserDenied)
		})
	}
}
