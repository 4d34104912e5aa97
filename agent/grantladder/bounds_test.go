package grantladder_test

import (
	"testing"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/consent"
)

// grantFor answers navigation and read with a, the first click with s and
// every other review with d: what the test witnesses is the denial.
func grantFor() func(consent.Review) string {
	given := false
	return func(r consent.Review) string {
		switch {
		case r.Kind == consent.KindNavigation || r.Kind == consent.KindRead:
			return "a"
		case !given && r.Action != nil && r.Action.Type == consent.ActionClick:
			given = true
			return "s"
		}
		return "d"
	}
}

// clickGranted opens the shop in a new conversation, and gives it a
// scoped grant for clicks (the page saw that click once).
func clickGranted(t *testing.T, name string, shop *fixture.Server) (*agentRun, *operator) {
	t.Helper()
	a := newAgent(t, name)
	op := newOperator(t, engine(), a.conv, "a")
	op.choose = grantFor()
	a.open(shop.URL + "/grants/shop.html")
	a.observe()
	a.click("button", "Filter")
	waitEvents(t, shop, "click-filter", events(shop, "click-filter"))
	return a, op
}

// wantDenied runs one action that must ask (the operator denies it) and
// checks the page saw nothing of it.
func wantDenied(t *testing.T, what string, a *agentRun, s *fixture.Server, ev string, typ, role, name string, extra map[string]any) {
	t.Helper()
	before := events(s, ev)
	res := a.act(typ, role, name, extra)
	if res["code"] != "user_denied" {
		t.Fatalf("%s: ran without a review: %v", what, res)
	}
	// Flush: an approved click's record would have been sent by now; a
	// second, granted-or-asked step's own record comes after it.
	if got := events(s, ev); got != before {
		t.Fatalf("%s: the page saw %d %s after the denial (%d before)", what, got, ev, before)
	}
}

func TestGrantNeverCoversAnotherConversationOriginOrClass(t *testing.T) {
	launch(t)
	shop, other := newSite(t), newSite(t)
	a, op := clickGranted(t, "owner", shop)
	waitEvents(t, shop, "click-filter", 1)

	// Its own class on its own origin: no review, the page sees it.
	k0, _, _ := op.snapshot()
	res := a.mustAct("click", "button", "Filter", nil)
	waitEvents(t, shop, "click-filter", 2)
	if k1, _, _ := op.snapshot(); k1 != k0 || res["grant"] == nil {
		t.Fatalf("a granted click asked (%d key) or did not name its grant: %v", k1-k0, res)
	}

	// Another class on the same origin.
	wantDenied(t, "a fill under a click grant", a, shop, "input-q", "fill", "textbox", "Search", map[string]any{"text": "x"})

	// Another origin, same conversation and tab.
	a.must("browser_navigate", map[string]any{"url": other.URL + "/grants/shop.html"})
	a.waitPath("/grants/shop.html")
	a.observe()
	wantDenied(t, "a click on another origin", a, other, "click-filter", "click", "button", "Filter", nil)

	// Another conversation on the same origin.
	b := newAgent(t, "stranger")
	opB := newOperator(t, engine(), b.conv, "a")
	opB.choose = func(r consent.Review) string {
		if r.Kind == consent.KindNavigation || r.Kind == consent.KindRead {
			return "a"
		}
		return "d"
	}
	b.open(shop.URL + "/grants/shop.html")
	b.observe()
	wantDenied(t, "another conversation's click", b, shop, "click-filter", "click", "button", "Filter", nil)
	if n := events(shop, "click-filter"); n != 2 {
		t.Fatalf("the shop saw %d filter clicks, want the owner's 2", n)
	}
}

func TestGrantNeverOutlivesTakeOverCancelTabCloseOrPolicyReload(t *testing.T) {
	launch(t)
	by := consent.Operator{Name: "measure"}
	for _, c := range []struct {
		name   string
		revoke func(t *testing.T, a *agentRun)
	}{
		{"take-over", func(t *testing.T, a *agentRun) {
			if err := engine().TakeOverAs(a.conv, by); err != nil {
				t.Fatal(err)
			}
			if err := engine().ResumeAs(a.conv, by); err != nil {
				t.Fatal(err)
			}
		}},
		{"x", func(t *testing.T, a *agentRun) {
			if err := engine().CancelAs(a.conv, by); err != nil {
				t.Fatal(err)
			}
		}},
		{"tab close", func(t *testing.T, a *agentRun) {
			a.must("browser_close", map[string]any{})
			a.tab = ""
			a.open(a.shopURL)
			a.observe()
		}},
		{"policy reload", func(t *testing.T, a *agentRun) {
			engine().SetGrantLimits(consent.GrantLimits{})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			shop := newSite(t)
			a, _ := clickGranted(t, "revoke", shop)
			a.shopURL = shop.URL + "/grants/shop.html"
			waitEvents(t, shop, "click-filter", 1)
			c.revoke(t, a)
			for _, g := range engine().Snapshot().Grants {
				if g.Conversation == a.conv {
					t.Fatalf("grant %s outlived the %s", g.ID, c.name)
				}
			}
			wantDenied(t, "a click after the "+c.name, a, shop, "click-filter", "click", "button", "Filter", nil)
		})
	}
}
