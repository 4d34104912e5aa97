package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
)

// grantsEngine is a strict engine with conversation c1 (tab t1 on screen)
// whose clock the TUI shares, so remaining times are exact.
func grantsEngine(t *testing.T, cfg consent.Config) *consent.Engine {
	t.Helper()
	cfg.Now = fixedClock
	if cfg.ReviewDelay == 0 {
		cfg.ReviewDelay = 250 * time.Millisecond
	}
	e := consent.New(cfg)
	t.Cleanup(e.Close)
	e.AddConversation("c1", "agent one")
	e.PutTab(consent.TabInfo{ID: "t1", Conversation: "c1", URL: "https://shop.test/cart"})
	e.Select("c1", "t1")
	return e
}

func clickReq(tab consent.TabID) consent.Request {
	return consent.Request{Gate: consent.GateAction, Conversation: "c1", Tab: tab, Origin: "https://shop.test",
		Action: &consent.Action{Type: consent.ActionClick, Ref: "e1", Role: "button", Name: "Next"}}
}

// untilFocused feeds the model the engine's changes until a review shows.
func untilFocused(m Model) Model {
	for m.state.Focused == nil {
		m = step(m, m.waitForChange()())
	}
	return m
}

func TestScopedKeyGivesAGrantShownAsAChipAndRevokedFromG(t *testing.T) {
	mem := &audittest.Memory{}
	e := grantsEngine(t, consent.Config{Audit: mem})
	asked := make(chan error, 1)
	go func() { asked <- e.Ask(context.Background(), clickReq("t1")) }()

	ana := consent.Operator{Name: "ana", Fingerprint: "SHA256:ana"}
	m := New(e, Options{Now: fixedClock, Operator: ana, Remote: true})
	defer m.Close()
	m = untilFocused(step(m, windowMsg(80, 24)))
	s := screen(m)
	// Before s is pressed the panel says in words what it would cover.
	for _, want := range []string{"every click on https://shop.test in this conversation, for 15 min", "s for a while"} {
		if !strings.Contains(s, want) {
			t.Fatalf("panel lacks %q:\n%s", want, s)
		}
	}
	// The key-ahead guard covers s.
	m, _ = keys(m, "s")
	if !strings.Contains(screen(m), flashTooEarly) {
		t.Fatalf("early s not ignored:\n%s", screen(m))
	}
	time.Sleep(300 * time.Millisecond)
	m, _ = keys(m, "s")
	select {
	case err := <-asked:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("s did not resolve the review:\n%s", screen(m))
	}
	for m.state.Focused != nil || len(m.state.Grants) == 0 {
		m = step(m, m.waitForChange()())
	}
	s = screen(m)
	if !strings.Contains(s, "s-grants: [click https://shop.test 15:00] · G") {
		t.Fatalf("no chip with the remaining time on the conversation:\n%s", s)
	}
	// G lists it with conversation, origin, class, uses and time left.
	m, _ = keys(m, "G")
	s = screen(m)
	id := m.state.Grants[0].ID
	if !strings.Contains(s, "▸ "+id+" click on https://shop.test") || !strings.Contains(s, "agent one · 1 use · 15:00 left · by ana") {
		t.Fatalf("G list:\n%s", s)
	}
	m, _ = keys(m, "X")
	for len(m.state.Grants) != 0 {
		m = step(m, m.waitForChange()())
	}
	if s = screen(m); strings.Contains(s, "s-grants:") || !strings.Contains(s, "no active grants") {
		t.Fatalf("revoked grant still on screen:\n%s", s)
	}
	var given, revoked bool
	for _, r := range mem.Records() {
		given = given || (r.Kind == audit.KindGrant && r.Grant == id && r.Operator == "ana" && r.KeyFingerprint == "SHA256:ana")
		revoked = revoked || (r.Kind == audit.KindGrantRevoked && r.Grant == id && r.Operator == "ana")
	}
	if !given || !revoked {
		t.Fatalf("grant given %v, revoked %v (attributed to ana): %+v", given, revoked, mem.Records())
	}
}

func TestScopedKeyRefusedSaysWhy(t *testing.T) {
	e := grantsEngine(t, consent.Config{GrantLimits: consent.GrantLimits{Grantable: []consent.GrantClass{}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = e.Ask(ctx, clickReq("t1")) }()
	m := New(e, Options{Now: fixedClock})
	defer m.Close()
	m = untilFocused(step(m, windowMsg(80, 24)))
	if s := screen(m); !strings.Contains(s, "not offered: managed policy turns scoped grants off") || strings.Contains(s, "s for a while") {
		t.Fatalf("panel under grantable: []:\n%s", s)
	}
	time.Sleep(300 * time.Millisecond)
	m, _ = keys(m, "s")
	if s := screen(m); !strings.Contains(s, "s refused: managed policy turns scoped grants off") {
		t.Fatalf("no refusal line:\n%s", s)
	}
	if m.state.Focused == nil {
		t.Fatal("a refused s decided the review")
	}
}

// A grant chip wraps whole, never between its origin and its time.
func TestGrantChipsWrapWhole(t *testing.T) {
	gs := []consent.ScopedGrant{
		{Class: "read", Origin: "http://127.0.0.1:18911", Expires: fixedNow.Add(10 * time.Minute)},
		{Class: "fill", Origin: "http://127.0.0.1:18911", Expires: fixedNow.Add(12 * time.Minute)},
	}
	for w := 40; w <= 90; w++ {
		for _, l := range grantChips(gs, fixedNow, w) {
			if strings.Count(l, "[") != strings.Count(l, "]") {
				t.Fatalf("w=%d: a chip is split: %q", w, l)
			}
			if width(l) > w {
				t.Fatalf("w=%d: %q is wider", w, l)
			}
		}
	}
}
