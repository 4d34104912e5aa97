package browser

import (
	"net/url"
	"testing"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
)

// popupOf returns the owned tab whose opener is tab.
func (e *env) popupOf(t *testing.T, tab consent.TabID) consent.TabInfo {
	t.Helper()
	for _, ti := range e.b.Tabs(conv) {
		if ti.OpenerTabID == tab {
			return ti
		}
	}
	t.Fatalf("no popup of %s among %v", tab, e.b.Tabs(conv))
	return consent.TabInfo{}
}

func TestPopupWaitsForConsentInItsOwnScope(t *testing.T) {
	a, b := fixturetest.Start(t), fixturetest.Start(t)
	e := launch(t, nil)
	tab := e.newTab(t)
	e.open(t, tab, a.URL, a.URL+"/popup.html?to="+url.QueryEscape(b.URL+"/session"))
	e.click(t, tab, 50, 50)

	p := e.gate.expectAsk(t, b.URL)
	pop := e.popupOf(t, tab)
	if p.req.Tab != pop.ID || p.req.Tab == tab || p.req.Conversation != conv {
		t.Fatalf("popup review for tab %s conv %s; popup is %s, opener %s", p.req.Tab, p.req.Conversation, pop.ID, tab)
	}
	if pop.Conversation != conv {
		t.Fatalf("popup owned by %q, want %q", pop.Conversation, conv)
	}
	if n := b.Total(); n != 0 {
		t.Fatalf("%d requests reached b before consent for the popup", n)
	}
	p.reply <- deny()
	e.waitURL(t, pop.ID, "about:blank")
	if n := b.Total(); n != 0 {
		t.Fatalf("%d requests reached b after denial", n)
	}

	// A popup to the opener's own origin asks again: grants are per tab and
	// never inherited.
	if err := e.b.Navigate(testCtx(t), conv, tab, a.URL+"/popup.html?to="+url.QueryEscape(a.URL+"/session")); err != nil {
		t.Fatal(err)
	}
	e.click(t, tab, 50, 50)
	p = e.gate.expectAsk(t, a.URL)
	if p.req.Tab == tab {
		t.Fatal("a popup reused its opener's navigation grant")
	}
	before := a.Count("/session")
	p.reply <- nil
	if _, err := a.WaitPath(testCtx(t), "/session"); err != nil || a.Count("/session") != before+1 {
		t.Fatalf("approved popup never loaded: %v", err)
	}
	// Its load is followed like any tab's: loaded, with the page's title.
	popID := p.req.Tab
	e.gate.until(t, "the popup loaded with its title", func(g *fakeGate) bool {
		ti := g.tabs[popID]
		return ti.URL == a.URL+"/session" && !ti.Loading && ti.Title == "Signed out"
	})
}
