package consent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

var (
	ana = Operator{Name: "ana", Fingerprint: "SHA256:ana"}
	bob = Operator{Name: "bob", Fingerprint: "SHA256:bob"}
)

// The first decision wins; the second operator's approval after the first
// one's denial does nothing, and everything names who decided.
func TestDecideAsFirstDecisionWins(t *testing.T) {
	h := newHarness(t, Config{}).std()
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	r := h.focused("t1")
	time.Sleep(2 * tDelay)
	if err := h.e.DecideAs(Decision{Review: r.ID, Approve: false, By: ana}); err != nil {
		t.Fatal(err)
	}
	if err := h.e.DecideAs(Decision{Review: r.ID, Approve: true, By: bob}); !errors.Is(err, ErrNoSuchReview) {
		t.Fatalf("second decision: %v", err)
	}
	wantCode(t, result(t, ch), errcode.UserDenied)
	recs := h.mem.Kind(audit.KindDecision)
	if len(recs) != 1 || recs[0].Decision != "denied" || recs[0].By != "operator" ||
		recs[0].Operator != "ana" || recs[0].KeyFingerprint != "SHA256:ana" {
		t.Fatalf("decision records %+v", recs)
	}
	st := h.e.Snapshot()
	if last := st.Activity[len(st.Activity)-1]; !strings.Contains(last.Text, "denied by ana") {
		t.Fatalf("activity %+v", last)
	}
}

// Decide is DecideAs by the local terminal.
func TestDecideIsLocal(t *testing.T) {
	h := newHarness(t, Config{}).std()
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	r := h.focused("t1")
	h.decide(r, true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	recs := h.mem.Kind(audit.KindDecision)
	if len(recs) != 1 || recs[0].Operator != "local" || recs[0].KeyFingerprint != "" {
		t.Fatalf("decision records %+v", recs)
	}
}

// The key-ahead guard counts from when the review reached the deciding
// operator's own screen, when that is later than the engine showed it.
func TestKeyAheadGuardPerScreen(t *testing.T) {
	h := newHarness(t, Config{ReviewDelay: 200 * time.Millisecond}).std()
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	r := h.focused("t1")
	time.Sleep(250 * time.Millisecond)
	// Past the engine's guard, but just now on bob's screen.
	err := h.e.DecideAs(Decision{Review: r.ID, Approve: true, By: bob, SeenAt: time.Now()})
	if !errors.Is(err, ErrTooEarly) {
		t.Fatalf("decision right after the review reached the screen: %v", err)
	}
	if recs := h.mem.Kind(audit.KindKeyIgnored); len(recs) != 1 || recs[0].Operator != "bob" {
		t.Fatalf("key ignored records %+v", recs)
	}
	// A SeenAt earlier than the engine's own moment does not shorten it.
	if err := h.e.DecideAs(Decision{Review: r.ID, Approve: true, By: ana, SeenAt: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
}

func TestTakeOverAsAndResumeByAnother(t *testing.T) {
	h := newHarness(t, Config{}).std()
	if err := h.e.TakeOverAs("c1", ana); err != nil {
		t.Fatal(err)
	}
	st := h.e.Snapshot()
	if c := st.Conversations[0]; !c.Paused || c.PausedBy != "ana" {
		t.Fatalf("paused conversation %+v", c)
	}
	if err := h.e.ResumeAs("c1", bob); err != nil {
		t.Fatal(err)
	}
	if c := h.e.Snapshot().Conversations[0]; c.Paused || c.PausedBy != "" {
		t.Fatalf("resumed conversation %+v", c)
	}
	to, re := h.mem.Kind(audit.KindTakeOver), h.mem.Kind(audit.KindResume)
	if len(to) != 1 || to[0].Operator != "ana" || to[0].KeyFingerprint != "SHA256:ana" {
		t.Fatalf("take-over records %+v", to)
	}
	if len(re) != 1 || re[0].Operator != "bob" || re[0].Note != "taken over by ana" {
		t.Fatalf("resume records %+v", re)
	}
	// The same operator's resume carries no note.
	_ = h.e.TakeOverAs("c1", ana)
	_ = h.e.ResumeAs("c1", ana)
	if re := h.mem.Kind(audit.KindResume); len(re) != 2 || re[1].Note != "" || re[1].Operator != "ana" {
		t.Fatalf("resume records %+v", re)
	}
}

// x, u and o are audited with the same attribution as a decision: the
// local terminal is "local", an SSH operator is named with their key.
func TestCancelClearFreezeKeepAreAttributed(t *testing.T) {
	h := newHarness(t, Config{}).std()
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	h.focused("t1")
	if err := h.e.CancelAs("c1", ana); err != nil {
		t.Fatal(err)
	}
	wantCode(t, result(t, ch), errcode.Canceled)
	if err := h.e.Cancel("c1"); err != nil {
		t.Fatal(err)
	}
	recs := h.mem.Kind(audit.KindCancel)
	if len(recs) != 2 || recs[0].Operator != "ana" || recs[0].KeyFingerprint != "SHA256:ana" ||
		recs[1].Operator != "local" || recs[1].KeyFingerprint != "" {
		t.Fatalf("cancel records %+v", recs)
	}
	// The review the cancel withdrew names the same operator.
	if dec := h.mem.Kind(audit.KindDecision); len(dec) != 1 || dec[0].Decision != "canceled" || dec[0].Operator != "ana" {
		t.Fatalf("decision records %+v", dec)
	}
	if !hasActivity(h.e.Snapshot(), "canceled by ana: ") {
		t.Fatalf("activity %+v", h.e.Snapshot().Activity)
	}

	if err := h.e.Freeze("c1", "job-a"); err != nil {
		t.Fatal(err)
	}
	if err := h.e.ClearFreezeAs("c1", bob); err != nil {
		t.Fatal(err)
	}
	if recs := h.mem.Kind(audit.KindFreezeCleared); len(recs) != 1 || recs[0].Operator != "bob" || recs[0].KeyFingerprint != "SHA256:bob" {
		t.Fatalf("freeze cleared records %+v", recs)
	}
}

func hasActivity(st State, sub string) bool {
	for _, a := range st.Activity {
		if strings.Contains(a.Text, sub) {
			return true
		}
	}
	return false
}
