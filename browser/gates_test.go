package browser

import (
	"net/url"
	"testing"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Each test below holds one cross-origin navigation at its review and asks
// the destination server, not the browser layer, whether anything arrived.

func TestRedirectChainAsksPerCrossOriginHop(t *testing.T) {
	a, b := fixturetest.Start(t), fixturetest.Start(t)
	e := launch(t, nil)
	tab := e.newTab(t)
	done := e.navigate(testCtx(t), tab, a.URL+"/302chain?n=2&to="+url.QueryEscape(b.URL+"/session"))
	e.gate.expectAsk(t, a.URL).reply <- nil
	// Both same-origin hops pass on the grant; the hop to b is held.
	p := e.gate.expectAsk(t, b.URL)
	if p.req.Tab != tab {
		t.Fatalf("hop review for tab %s, want %s", p.req.Tab, tab)
	}
	if a.Count("/302chain") != 2 || b.Total() != 0 {
		t.Fatalf("at b's review: a chain hops=%d, b requests=%d (want 2, 0)", a.Count("/302chain"), b.Total())
	}
	p.reply <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b.Count("/session") != 1 {
		t.Fatalf("b /session requested %d times after approval", b.Count("/session"))
	}
}

func TestRedirectHopDenied(t *testing.T) {
	a, b := fixturetest.Start(t), fixturetest.Start(t)
	e := launch(t, nil)
	tab := e.newTab(t)
	done := e.navigate(testCtx(t), tab, a.URL+"/redirect?to="+url.QueryEscape(b.URL+"/session"))
	e.gate.expectAsk(t, a.URL).reply <- nil
	e.gate.expectAsk(t, b.URL).reply <- deny()
	wantCode(t, <-done, errcode.UserDenied)
	e.waitURL(t, tab, "about:blank")
	if b.Total() != 0 {
		t.Fatalf("%d requests reached b after denial", b.Total())
	}
}

// scriptedNav covers navigations the page starts itself after the agent's
// navigation has returned.
func scriptedNav(t *testing.T, page func(a, b *fixture.Server) string, trigger func(e *env, tab consent.TabID), wantPath string) {
	a, b := fixturetest.Start(t), fixturetest.Start(t)
	e := launch(t, nil)
	tab := e.newTab(t)
	e.open(t, tab, a.URL, page(a, b))
	if trigger != nil {
		trigger(e, tab)
	}
	p := e.gate.expectAsk(t, b.URL)
	if p.req.Tab != tab {
		t.Fatalf("review for tab %s, want %s", p.req.Tab, tab)
	}
	if n := b.Total(); n != 0 {
		t.Fatalf("%d requests reached b before consent", n)
	}
	p.reply <- deny()
	e.waitURL(t, tab, "about:blank")
	if n := b.Total(); n != 0 {
		t.Fatalf("%d requests reached b after denial", n)
	}

	// Again, approved this time: the request does arrive, so the zero
	// above was the gate and not a broken page.
	// a's grant survives, so this reload asks nothing.
	if err := e.b.Navigate(testCtx(t), conv, tab, page(a, b)); err != nil {
		t.Fatal(err)
	}
	if trigger != nil {
		trigger(e, tab)
	}
	e.gate.expectAsk(t, b.URL).reply <- nil
	if _, err := b.WaitPath(testCtx(t), wantPath); err != nil {
		t.Fatal(err)
	}
}

func TestJSRedirectWaitsForConsent(t *testing.T) {
	scriptedNav(t, func(a, b *fixture.Server) string {
		return a.URL + "/js-redirect.html?to=" + url.QueryEscape(b.URL+"/session")
	}, nil, "/session")
}

func TestMetaRefreshWaitsForConsent(t *testing.T) {
	scriptedNav(t, func(a, b *fixture.Server) string {
		return a.URL + "/meta-refresh?to=" + url.QueryEscape(b.URL+"/session")
	}, nil, "/session")
}

func TestFormSubmitWaitsForConsent(t *testing.T) {
	scriptedNav(t, func(a, b *fixture.Server) string {
		return a.URL + "/form.html?to=" + url.QueryEscape(b.URL+"/record")
	}, func(e *env, tab consent.TabID) { e.click(t, tab, 50, 50) }, "/record")
}

func TestLinkClickWaitsForConsent(t *testing.T) {
	scriptedNav(t, func(a, b *fixture.Server) string {
		return a.URL + "/link.html?to=" + url.QueryEscape(b.URL+"/session")
	}, func(e *env, tab consent.TabID) { e.click(t, tab, 50, 50) }, "/session")
}
