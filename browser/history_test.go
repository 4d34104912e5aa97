package browser

import (
	"testing"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Back, forward and reload pass the hook like any navigation: with the
// tab's grants gone, going back asks again and nothing reaches the site
// before the answer (no back/forward cache can restore the page behind
// the hook's back).
func TestHistoryIsGatedLikeNavigate(t *testing.T) {
	a, b := fixturetest.Start(t), fixturetest.Start(t)
	e := launch(t, nil)
	tab := e.newTab(t)
	e.open(t, tab, a.URL, a.URL+"/")
	e.open(t, tab, b.URL, b.URL+"/session")

	// As take-over or cancel would: the tab's navigation grants go.
	e.gate.mu.Lock()
	clear(e.gate.grants)
	e.gate.mu.Unlock()

	done := make(chan error, 1)
	go func() { done <- e.b.History(testCtx(t), conv, tab, "back") }()
	p := e.gate.expectAsk(t, a.URL)
	if n := a.Count("/"); n != 1 {
		t.Fatalf("going back reached the site %d times before consent", n-1)
	}
	p.reply <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.waitURL(t, tab, a.URL+"/")
	if n := a.Count("/"); n != 2 {
		t.Fatalf("approved back: page requested %d times in all, want 2: %+v", n, a.Requests())
	}

	// Reload of an origin the tab now holds: no review, one request.
	if err := e.b.History(testCtx(t), conv, tab, "reload"); err != nil {
		t.Fatal(err)
	}
	e.gate.noAsk(t)
	if n := a.Count("/"); n != 3 {
		t.Fatalf("reload: page requested %d times in all, want 3", n)
	}

	go func() { done <- e.b.History(testCtx(t), conv, tab, "forward") }()
	e.gate.expectAsk(t, b.URL).reply <- deny()
	wantCode(t, <-done, errcode.UserDenied)
	if n := b.Count("/session"); n != 1 {
		t.Fatalf("denied forward reached the site: %d requests in all, want 1", n)
	}

	wantCode(t, e.b.History(testCtx(t), conv, tab, "sideways"), errcode.InvalidAction)
	wantCode(t, e.b.History(testCtx(t), "c2", tab, "back"), errcode.WrongConversation)
}

// A page the back/forward cache could keep: going back to it after the
// grants went must still ask, because the cache is off and the request
// goes through the hook (even if the HTTP cache then answers it).
func TestBackToACacheablePageAsks(t *testing.T) {
	a := fixturetest.Start(t)
	e := launch(t, nil)
	tab := e.newTab(t)
	e.open(t, tab, a.URL, a.URL+"/cacheable")
	if err := e.b.Navigate(testCtx(t), conv, tab, a.URL+"/session"); err != nil {
		t.Fatal(err)
	}
	e.gate.mu.Lock()
	clear(e.gate.grants)
	e.gate.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- e.b.History(testCtx(t), conv, tab, "back") }()
	e.gate.expectAsk(t, a.URL).reply <- deny()
	wantCode(t, <-done, errcode.UserDenied)
	e.waitURL(t, tab, "about:blank")
}

func TestFeatureFlagsAreMerged(t *testing.T) {
	got := mergeFeatureFlags([]string{"--enable-features=WebMCP", "--disable-features=BackForwardCache", "--x", "--disable-features=Foo", "--enable-features=Bar"})
	want := []string{"--enable-features=WebMCP,Bar", "--disable-features=BackForwardCache,Foo", "--x"}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}
