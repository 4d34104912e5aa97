package browser

import (
	"context"
	"testing"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// operatorNavigate drives the tab as the person would (the address bar):
// a CDP navigation that no agent call made.
func operatorNavigate(t *testing.T, b *Browser, tab consent.TabID, u string) {
	t.Helper()
	if _, err := (proto.PageNavigate{URL: u}).Call(tabClient(t, b, tab)); err != nil {
		t.Fatal(err)
	}
}

// design.md §4 take-over against the real consent engine: the held agent
// navigation fails, every agent op is paused, the operator navigates
// without reviews or grants (policy still applies), and after resume the
// agent's next navigation asks again.
func TestTakeOverGivesNavigationToTheOperator(t *testing.T) {
	a, b, c := fixturetest.Start(t), fixturetest.Start(t), fixturetest.Start(t)
	eng, br, tab := engineTab(t, a.URL, b.URL)
	ctx := testCtx(t)
	navigateApproved(t, eng, br, tab, a.URL+"/session", a.URL)
	done := make(chan error, 1)

	// An agent navigation waits for its review when the operator takes over.
	go func() { done <- br.Navigate(ctx, conv, tab, b.URL+"/session") }()
	queued(t, eng, b.URL)
	if err := eng.TakeOver(conv); err != nil {
		t.Fatal(err)
	}
	wantCode(t, <-done, errcode.Paused)
	if n := b.Total(); n != 0 {
		t.Fatalf("the held navigation reached the site after take-over: %+v", b.Requests())
	}

	_, err := br.NewTab(ctx, conv, false)
	wantCode(t, err, errcode.Paused)
	wantCode(t, br.Navigate(ctx, conv, tab, a.URL+"/"), errcode.Paused)
	wantCode(t, br.History(ctx, conv, tab, "reload"), errcode.Paused)

	// The operator goes where no grant exists: no review, no grant.
	operatorNavigate(t, br, tab, b.URL+"/session")
	if _, err := b.WaitPath(ctx, "/session"); err != nil {
		t.Fatal(err)
	}
	if q := eng.Snapshot().Queue; len(q) != 0 {
		t.Fatalf("the operator's navigation was put up for review: %+v", q)
	}
	// Policy is not the agent's to lift, nor the operator's.
	operatorNavigate(t, br, tab, c.URL+"/session")
	if n := c.Total(); n != 0 {
		t.Fatalf("a policy-blocked origin was reached during take-over: %+v", c.Requests())
	}

	if err := eng.Resume(conv); err != nil {
		t.Fatal(err)
	}
	// The origin the operator visited was never granted, and the agent's
	// own grant for a died with the take-over: both ask again.
	before := a.PageRequests()
	go func() { done <- br.Navigate(ctx, conv, tab, a.URL+"/session") }()
	r := queued(t, eng, a.URL)
	if r.Gate != consent.GateNavigation || r.Tab != tab {
		t.Fatalf("review %+v", r)
	}
	if n := a.PageRequests(); n != before {
		t.Fatalf("after resume the site was reached before consent: %+v", a.Requests())
	}
	if err := eng.Decide(r.ID, false); err != nil {
		t.Fatal(err)
	}
	wantCode(t, <-done, errcode.UserDenied)
	if n := a.PageRequests(); n != before {
		t.Fatalf("a denied navigation after resume reached the site: %+v", a.Requests())
	}
}

// Take-over stops what the agent's page was still loading: the pending
// request is dropped by Chromium, which the server sees.
func TestTakeOverStopsLoading(t *testing.T) {
	a := fixturetest.Start(t)
	e := launch(t, nil)
	tab := e.newTab(t)
	// The op's context, which the engine would cancel at take-over.
	op, cancel := context.WithCancel(testCtx(t))
	done := e.navigate(op, tab, a.URL+"/slow.html")
	e.gate.expectAsk(t, a.URL).reply <- nil
	if _, err := a.WaitPath(testCtx(t), "/slow"); err != nil {
		t.Fatal(err)
	}
	e.gate.mu.Lock()
	e.gate.paused[conv] = true
	e.gate.mu.Unlock()
	e.gate.emit(consent.Event{Kind: consent.EventTakeOver, Conversation: conv})
	if err := a.WaitAborted(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	// The navigation's own result is not the point; the witness above is.
	if err := <-done; err != nil {
		t.Logf("navigation ended: %v", err)
	}
}
