package browser

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/policy"
)

// focused waits for the engine to put a review for origin on screen.
func focused(t *testing.T, eng *consent.Engine, origin string) consent.Review {
	t.Helper()
	return awaitReview(t, eng, "on screen", func(s consent.State) []consent.Review {
		if s.Focused == nil {
			return nil
		}
		return []consent.Review{*s.Focused}
	}, origin)
}

// queued waits for a pending review for origin anywhere in the engine's
// queue, on screen or not.
func queued(t *testing.T, eng *consent.Engine, origin string) consent.Review {
	t.Helper()
	return awaitReview(t, eng, "queued", func(s consent.State) []consent.Review { return s.Queue }, origin)
}

// awaitReview waits, on the engine's change signal, until among(snapshot)
// holds a review for origin.
func awaitReview(t *testing.T, eng *consent.Engine, where string, among func(consent.State) []consent.Review, origin string) consent.Review {
	t.Helper()
	ch, stop := eng.Changes()
	defer stop()
	ctx := testCtx(t)
	for {
		for _, r := range among(eng.Snapshot()) {
			if r.Origin == origin {
				return r
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("no review %s for %s; queue %+v", where, origin, eng.Snapshot().Queue)
		}
	}
}

// engineTab is a Browser on the real consent engine, under a managed
// policy that allows only origins (none given: no policy), and a task tab
// of conv.
func engineTab(t *testing.T, origins ...string) (*consent.Engine, *Browser, consent.TabID) {
	t.Helper()
	needChromium(t)
	var pol *policy.Policy
	if len(origins) > 0 {
		list, _ := json.Marshal(origins)
		var err error
		if pol, err = policy.Parse("org.json", fmt.Appendf(nil, `{"execution":{"browserOrigins":%s}}`, list)); err != nil {
			t.Fatal(err)
		}
	}
	eng := consent.New(consent.Config{ReviewDelay: time.Nanosecond})
	t.Cleanup(eng.Close)
	eng.AddConversation(conv, "agent")
	ctx := testCtx(t)
	br, err := Launch(ctx, Options{Headless: true, ProfileDir: filepath.Join(t.TempDir(), "p"), Gate: eng, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = br.Close() })
	tab, err := br.NewTab(ctx, conv, false)
	if err != nil {
		t.Fatal(err)
	}
	return eng, br, tab
}

// navigateApproved is the agent's navigation of tab to u, approved in
// origin's review as the operator would.
func navigateApproved(t *testing.T, eng *consent.Engine, br *Browser, tab consent.TabID, u, origin string) {
	t.Helper()
	ctx, done := testCtx(t), make(chan error, 1)
	go func() { done <- br.Navigate(ctx, conv, tab, u) }()
	if err := eng.Decide(queued(t, eng, origin).ID, true); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The hook against the real consent engine: the operator's decision, not
// a test double, is what lets a request out.
func TestHookWithConsentEngine(t *testing.T) {
	a, b := fixturetest.Start(t), fixturetest.Start(t)
	eng, br, tab := engineTab(t)
	ctx := testCtx(t)
	eng.Select(conv, tab)

	done := make(chan error, 1)
	go func() { done <- br.Navigate(ctx, conv, tab, a.URL+"/session") }()
	r := focused(t, eng, a.URL)
	if r.Gate != consent.GateNavigation || r.Tab != tab {
		t.Fatalf("review %+v", r)
	}
	if a.Total() != 0 {
		t.Fatalf("%d requests before the operator decided", a.Total())
	}
	if err := eng.Decide(r.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if a.Count("/session") != 1 {
		t.Fatalf("approved page requested %d times", a.Count("/session"))
	}

	go func() { done <- br.Navigate(ctx, conv, tab, b.URL+"/session") }()
	r = focused(t, eng, b.URL)
	if err := eng.Decide(r.ID, false); err != nil {
		t.Fatal(err)
	}
	wantCode(t, <-done, errcode.UserDenied)
	if b.Total() != 0 {
		t.Fatalf("%d requests reached b after the operator denied", b.Total())
	}
}
