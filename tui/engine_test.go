package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent"
)

// TestRealEngineKeyAheadGuard runs the screen against the real engine: the
// guard is the engine's, the TUI only reports it, and a later `a` approves.
func TestRealEngineKeyAheadGuard(t *testing.T) {
	clock := fixedClock
	// The guard counts real (monotonic) time in the engine, so this test
	// waits out a real delay; 1 s leaves a wide margin for the early press.
	const delay = time.Second
	e := consent.New(consent.Config{Profile: consent.ProfileStrict, ReviewDelay: delay, Now: clock})
	e.AddConversation("c1", "agent one")
	e.PutTab(consent.TabInfo{ID: "t1", Conversation: "c1", URL: "about:blank"})
	e.Select("c1", "t1")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	asked := make(chan error, 1)
	go func() {
		asked <- e.Ask(ctx, consent.Request{Gate: consent.GateNavigation, Conversation: "c1", Tab: "t1", Origin: "https://a.test:8443"})
	}()

	m := New(e, Options{Now: clock})
	defer m.Close()
	m = step(m, windowMsg(100, 30))
	for m.state.Focused == nil {
		m = step(m, m.waitForChange()())
	}
	if !strings.Contains(screen(m), "https://a.test:8443") {
		t.Fatalf("review not on screen:\n%s", screen(m))
	}

	t.Logf("screen with the real engine's review:\n%s", plain(m.View().Content))
	m, _ = keys(m, "a")
	if !strings.Contains(screen(m), "key ignored: review just appeared") {
		t.Fatalf("early a was not reported:\n%s", screen(m))
	}
	select {
	case err := <-asked:
		t.Fatalf("an early a resolved the gate: %v", err)
	default:
	}

	<-time.After(delay) // the review has now been on screen longer than the delay
	m, _ = keys(m, "a")
	select {
	case err := <-asked:
		if err != nil {
			t.Fatalf("approve after the delay: Ask = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("approve after the delay did not resolve the gate:\n%s", screen(m))
	}
	if !strings.Contains(screen(m), "approved") {
		t.Errorf("no approval feedback:\n%s", screen(m))
	}
}
