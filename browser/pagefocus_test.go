package browser

import (
	"strings"
	"testing"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
)

// PageFocus names the field typed keys reach, and follows it when Tab moves
// focus, with its box on the page; never what was typed into it.
func TestPageFocusFollowsTheField(t *testing.T) {
	e := launch(t, nil)
	site := fixturetest.Start(t)
	tab := e.newTab(t)
	e.open(t, tab, site.URL, site.URL+"/pageview.html")
	ctx := testCtx(t)
	m, err := proto.PageGetLayoutMetrics{}.Call(tabClient(t, e.b, tab))
	if err != nil {
		t.Fatal(err)
	}
	vw := float64(m.CSSLayoutViewport.ClientWidth)

	user, err := e.b.PageFocus(ctx, tab) // the user name field has autofocus
	if err != nil {
		t.Fatal(err)
	}
	if user.Label() != "[textbox] User name" || !user.HasBox || user.Box[0] < vw/2 {
		t.Fatalf("focus %+v (%q), want the user name field in the right half of %v", user, user.Label(), vw)
	}
	e.gate.mu.Lock()
	e.gate.paused[conv] = true
	e.gate.mu.Unlock()
	typeKeys(t, e.b, tab, "b", "o", "b", "Tab", "h", "u", "n", "t", "e", "r", "2")
	pass, err := e.b.PageFocus(ctx, tab)
	if err != nil {
		t.Fatal(err)
	}
	if pass.Label() != "[textbox] Password" || !pass.HasBox || pass.Box[1] <= user.Box[1] {
		t.Fatalf("after Tab the focus is %+v, want the password field below %+v", pass, user)
	}
	for _, f := range []Focus{user, pass} {
		if strings.Contains(f.Name, "bob") || strings.Contains(f.Name, "hunter2") {
			t.Errorf("the focus names what was typed: %+v", f)
		}
	}
}
