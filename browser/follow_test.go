package browser

import (
	"testing"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
)

// A tab whose session another caller opened first (page input, a
// take-over's stop of loading) still has its loads followed once attach
// runs: lifecycle events are the tab's own state, not "a session exists".
// A newcomer walk saw the demo's popup stay "loading", without its title,
// for good.
func TestAttachFollowsATabWhoseSessionCameFirst(t *testing.T) {
	a := fixturetest.Start(t)
	e := launch(t, nil)
	tab := e.newTab(t)
	tb, err := e.b.reg.lookup(conv, tab)
	if err != nil {
		t.Fatal(err)
	}
	// Drop the session NewTab attached, then open one the way page input
	// does, which turns nothing on.
	e.b.reg.mu.Lock()
	old := tb.session
	delete(e.b.reg.bySess, old)
	tb.session, tb.following = "", false
	e.b.reg.mu.Unlock()
	if err := (proto.TargetDetachFromTarget{SessionID: old}).Call(e.b.rod().Context(testCtx(t))); err != nil {
		t.Fatal(err)
	}
	if _, err := e.b.session(testCtx(t), tb); err != nil {
		t.Fatal(err)
	}
	// Navigate attaches and waits for the load, which only a followed
	// session reports.
	e.open(t, tab, a.URL, a.URL+"/session")
	e.gate.until(t, "the tab loaded with its title", func(g *fakeGate) bool {
		ti := g.tabs[tab]
		return ti.URL == a.URL+"/session" && !ti.Loading && ti.Title == "Signed out"
	})
}
