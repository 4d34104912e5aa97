package browser

import (
	"errors"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/browser/dom"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Chromium killed while a click is in flight: the click reports that input
// may have reached the page and is not retried; the next operation fails
// browser_unavailable and starts a relaunch on the same profile, the header
// says so, old tabs are tab_closed, and a new open works on the new
// Chromium. Nothing of either Chromium or the Browser outlives Close.
func TestCrashDuringActThenRelaunch(t *testing.T) {
	needChromium(t)
	a := fixturetest.Start(t)
	before := runtime.NumGoroutine()

	e := launch(t, nil)
	b, g, profile := e.b, e.gate, e.b.opts.ProfileDir
	tab := e.newTab(t)
	e.open(t, tab, a.URL, a.URL+"/hang.html")

	ctx := testCtx(t)
	page, err := b.Page(ctx, conv, tab)
	if err != nil {
		t.Fatal(err)
	}
	dt := dom.NewTab(page, string(tab), dom.Options{})
	obs, err := dt.Observe(ctx, dom.ObserveRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ref := ""
	for _, el := range obs.Elements {
		if el.Name == "Freeze" {
			ref = el.Ref
		}
	}
	if ref == "" {
		t.Fatalf("no Freeze button in %s", obs.TextForm)
	}
	prep, err := dt.Prepare(ctx, obs.ID, dom.Action{Type: "click", Ref: ref})
	if err != nil {
		t.Fatal(err)
	}
	acted := make(chan error, 1)
	go func() {
		_, err := prep.Dispatch(ctx)
		acted <- err
	}()
	pressed := func(r fixture.Request) bool { return r.Query == "kind=pressed" }
	if _, err := a.WaitFor(ctx, pressed); err != nil {
		t.Fatal(err)
	}
	// The page is frozen inside the click's mousedown: kill it now.
	pid := b.PID()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = <-acted
	var ce *errcode.Error
	if !errors.As(err, &ce) || !ce.Dispatched || !ce.MayHaveChangedState {
		t.Fatalf("act across the crash: %#v, want dispatched and mayHaveChangedState", err)
	}
	n := 0
	for _, r := range a.Requests() {
		if pressed(r) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the click reached the page %d times; it must never be retried", n)
	}

	g.until(t, "the dead tab reported closed", func(g *fakeGate) bool { return g.removed[tab] })
	wantCode(t, b.Navigate(testCtx(t), conv, tab, a.URL+"/session"), errcode.BrowserUnavailable)
	g.until(t, "the header to show the relaunched Chromium", func(g *fakeGate) bool {
		s := g.statuses[len(g.statuses)-1]
		return strings.HasPrefix(s, "Chromium headless (no window) · ") && len(g.statuses) > 2
	})
	g.mu.Lock()
	statuses := append([]string(nil), g.statuses...)
	g.mu.Unlock()
	if !contains(statuses, StatusRelaunching) {
		t.Fatalf("the header never said %q: %q", StatusRelaunching, statuses)
	}
	waitFor(t, "the killed Chromium reaped", func() bool { return len(groupMembers(pid, false)) == 0 })

	if err := b.Available(); err != nil {
		t.Fatalf("relaunched, yet: %v", err)
	}
	newPID := b.PID()
	if newPID == pid || newPID == 0 {
		t.Fatalf("no new Chromium: pid %d", newPID)
	}
	if b.ProfileDir() != profile {
		t.Fatalf("relaunched on %s, want the same profile %s", b.ProfileDir(), profile)
	}
	wantCode(t, b.Navigate(testCtx(t), conv, tab, a.URL+"/session"), errcode.TabClosed)
	tab2 := e.newTab(t)
	e.open(t, tab2, a.URL, a.URL+"/session")
	if a.Count("/session") != 1 {
		t.Fatalf("open after relaunch: /session requested %d times", a.Count("/session"))
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the relaunched Chromium gone", func() bool { return len(groupMembers(newPID, false)) == 0 })
	if !poll(func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before, %d after Close\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Chromium killed while a navigation's GET has reached the site (the
// fixture's /slow never answers): the outcome is unknown, so Navigate says
// dispatched and mayHaveChangedState. Killed while the same kind of
// navigation is still held for its review, nothing left the browser, and
// Navigate says so.
func TestCrashDuringNavigation(t *testing.T) {
	a := fixturetest.Start(t)
	for _, reached := range []bool{true, false} {
		name := "held"
		if reached {
			name = "reached"
		}
		t.Run(name, func(t *testing.T) {
			e := launch(t, nil)
			tab := e.newTab(t)
			before := a.Count("/slow")
			done := e.navigate(testCtx(t), tab, a.URL+"/slow")
			ask := e.gate.expectAsk(t, a.URL)
			if reached {
				ask.reply <- nil
				if _, err := a.WaitFor(testCtx(t), func(r fixture.Request) bool { return r.Path == "/slow" }); err != nil {
					t.Fatal(err)
				}
			}
			if err := syscall.Kill(-e.b.PID(), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Navigate did not return after the crash")
			}
			var ce *errcode.Error
			if !errors.As(err, &ce) {
				t.Fatalf("navigate across the crash: %v, want a coded error", err)
			}
			got := a.Count("/slow") - before
			if reached {
				if got != 1 || !ce.Dispatched || !ce.MayHaveChangedState || ce.Next != errcode.NextObserveBeforeRetry {
					t.Fatalf("/slow reached %d times; result %#v, want dispatched, mayHaveChangedState, observe_before_retry", got, ce)
				}
				return
			}
			if got != 0 || ce.Dispatched || ce.MayHaveChangedState {
				t.Fatalf("/slow reached %d times while held; result %#v, want not dispatched", got, ce)
			}
		})
	}
}

// An Unshown Browser (the demo's policy-run Chromium) never writes the
// header's browser field: not at launch, not while relaunching after a
// crash, not once relaunched. Issue 25: the demo's two Chromiums both
// wrote it and whichever came last won. The console's own Browser, the
// control, does write it.
func TestUnshownBrowserLeavesTheHeader(t *testing.T) {
	needChromium(t)
	if shown := launch(t, nil); len(shown.gate.headerStatuses()) == 0 {
		t.Fatal("a launched Browser wrote no header: the witness sees nothing")
	}

	e := launch(t, func(o *Options) { o.Unshown = true })
	b, g := e.b, e.gate
	pid := b.PID()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Available, once the crash is noticed, starts the relaunch.
	waitFor(t, "the relaunched Chromium", func() bool { return b.Available() == nil && b.PID() != pid })
	// Close waits for the relaunch's last word, the header it would write.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if s := g.headerStatuses(); len(s) != 0 {
		t.Fatalf("an Unshown Browser wrote the header: %q", s)
	}
}
