package browser

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// After the socket to an attached browser drops, the console attaches
// again by itself: operations fail browser_unavailable until then, the
// tab it owned on the lost connection is closed in the browser, and on
// the new session the hook reviews the first navigation (nothing reaches
// the site before the approval).
func TestLostAttachedBrowserIsAttachedAgain(t *testing.T) {
	needChromium(t)
	a := fixturetest.Start(t)
	proc, ws := bareChromiumAt(t)
	defer proc.stop(0)
	px, pws := proxied(t, ws)
	e := launch(t, func(o *Options) { o.BrowserURL = pws })
	old := e.newTab(t)
	tb, err := e.b.reg.lookup(conv, old)
	if err != nil {
		t.Fatal(err)
	}
	oldTarget := tb.target
	gone := e.b.Done()

	px.drop()
	<-gone
	if err := e.b.Available(); err != nil {
		// Already attached again is fine too; otherwise it must say so.
		wantCode(t, err, errcode.BrowserUnavailable)
		if !strings.Contains(err.Error(), "attaching again") {
			t.Errorf("unavailable says %q", err)
		}
	}
	waitFor(t, "the console to attach again", func() bool { return e.b.Available() == nil })
	e.gate.until(t, "the header to name the attached browser", func(g *fakeGate) bool {
		return strings.HasPrefix(g.statuses[len(g.statuses)-1], "attached, no network wall · ")
	})
	if _, err := e.b.reg.lookup(conv, old); errcode.Of(err) != errcode.TabClosed {
		t.Fatalf("the old tab after re-attach: %v, want tab_closed", err)
	}
	// Target.closeTarget answers before Chromium has destroyed the page,
	// so the close is an effect to wait for, not a state at attach time.
	waitFor(t, "the tab the console owned on the lost connection to close in the browser", func() bool { return !targetAlive(t, ws, oldTarget) })

	tab := e.newTab(t)
	done := e.navigate(testCtx(t), tab, a.URL+"/session")
	p := e.gate.expectAsk(t, a.URL)
	if n := a.Total(); n != 0 {
		t.Fatalf("%d requests reached the site before the review on the new session", n)
	}
	p.reply <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if a.Count("/session") != 1 {
		t.Fatalf("the approved navigation reached the site %d times", a.Count("/session"))
	}
}

// targetAlive asks Chromium directly whether target still exists.
func targetAlive(t *testing.T, ws string, target proto.TargetTargetID) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), 10*time.Second)
	defer cancel()
	sock := &cdp.WebSocket{}
	if err := sock.Connect(ctx, ws, nil); err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	c := rod.New().Client(cdp.New().Start(sock)).Context(ctx)
	res, err := proto.TargetGetTargets{}.Call(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range res.TargetInfos {
		if ti.TargetID == target {
			return true
		}
	}
	return false
}
