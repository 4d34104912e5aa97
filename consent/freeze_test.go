package consent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

func TestFreezeHoldsUntilTheOperatorClears(t *testing.T) {
	h := newHarness(t, Config{}).std()
	ev, stop := listenAll(h.e)
	defer stop()

	if err := h.e.Frozen("c1"); err != nil {
		t.Fatalf("a fresh conversation is frozen: %v", err)
	}
	if err := h.e.Freeze("c1", "job-a"); err != nil {
		t.Fatal(err)
	}
	ce := wantCodeErr(t, h.e.Frozen("c1"), errcode.JobUnknown)
	for _, want := range []string{"job-a", "unknown", "operator", "console"} {
		if !strings.Contains(ce.Message, want) {
			t.Errorf("job_unknown message %q does not mention %q", ce.Message, want)
		}
	}
	if ce.Next != errcode.NextUserResume {
		t.Errorf("next = %q, want %q", ce.Next, errcode.NextUserResume)
	}
	if err := h.e.Frozen("c2"); err != nil {
		t.Errorf("freezing c1 froze c2: %v", err)
	}

	// A second freeze keeps the first job: that is the answer the agent lost first.
	if err := h.e.Freeze("c1", "job-b"); err != nil {
		t.Fatal(err)
	}
	st := h.e.Snapshot()
	c1 := st.Conversations[0]
	if c1.ID != "c1" || c1.Frozen == nil || c1.Frozen.Job != "job-a" || c1.Frozen.Since.IsZero() {
		t.Fatalf("snapshot of c1 = %+v, want frozen for job-a", c1)
	}
	if st.Conversations[1].Frozen != nil {
		t.Errorf("c2 shows frozen: %+v", st.Conversations[1])
	}
	// The snapshot is a copy: changing it changes nothing in the engine.
	c1.Frozen.Job = "mutated"
	if h.e.Snapshot().Conversations[0].Frozen.Job != "job-a" {
		t.Error("the snapshot shares the engine's freeze")
	}

	// Nothing but the operator's clear ends it: not a take-over and resume,
	// not a cancel.
	if err := h.e.TakeOver("c1"); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Resume("c1"); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Cancel("c1"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, h.e.Frozen("c1"), errcode.JobUnknown)

	// Freezing stops nothing: the job's own steps still begin ops and ask.
	op, err := h.e.Begin(context.Background(), "c1", "t1", "batch step 1/1")
	if err != nil {
		t.Fatalf("a frozen conversation's job cannot begin a step: %v", err)
	}
	op.End()

	if err := h.e.ClearFreeze("c1"); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Frozen("c1"); err != nil {
		t.Fatalf("still frozen after the clear: %v", err)
	}
	if h.e.Snapshot().Conversations[0].Frozen != nil {
		t.Error("the snapshot still shows the freeze")
	}
	// Clearing again is a no-op: no second record, no event.
	if err := h.e.ClearFreeze("c1"); err != nil {
		t.Fatal(err)
	}

	ev.waitFor(t, EventFreezeCleared)
	got := ev.of(EventFreeze, EventFreezeCleared)
	if len(got) != 2 || got[0].Kind != EventFreeze || got[1].Kind != EventFreezeCleared ||
		got[0].Conversation != "c1" || got[0].Job != "job-a" || got[1].Job != "job-a" {
		t.Errorf("freeze events = %+v, want one freeze and one clear of c1's job-a", got)
	}

	frz, clr := h.mem.Kind(audit.KindFreeze), h.mem.Kind(audit.KindFreezeCleared)
	if len(frz) != 1 || frz[0].Conversation != "c1" || frz[0].Note != "job-a" || frz[0].Code != string(errcode.JobUnknown) || frz[0].By != "engine" || frz[0].Time.IsZero() {
		t.Errorf("freeze records = %+v", frz)
	}
	if len(clr) != 1 || clr[0].Conversation != "c1" || clr[0].Note != "job-a" || clr[0].By != "operator" {
		t.Errorf("clear records = %+v", clr)
	}
	var lines []string
	for _, a := range h.e.Snapshot().Activity {
		if a.Conversation == "c1" && strings.Contains(a.Text, "job-a") {
			lines = append(lines, a.Text)
		}
	}
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "frozen: ") || !strings.HasPrefix(lines[1], "freeze cleared by local: ") {
		t.Errorf("activity about job-a = %q, want the freeze and the clear", lines)
	}
}

func TestFreezeUnknownAndEndedConversations(t *testing.T) {
	h := newHarness(t, Config{}).std()
	if err := h.e.Freeze("nope", "job-a"); !errors.Is(err, ErrUnknownConversation) {
		t.Errorf("Freeze(unknown) = %v", err)
	}
	if err := h.e.ClearFreeze("nope"); !errors.Is(err, ErrUnknownConversation) {
		t.Errorf("ClearFreeze(unknown) = %v", err)
	}
	if err := h.e.Frozen("nope"); err != nil {
		t.Errorf("Frozen(unknown) = %v: other checks answer for an unknown conversation", err)
	}
	// The freeze belongs to the conversation and ends with it; a
	// conversation that comes back under the same id starts unfrozen.
	if err := h.e.Freeze("c1", "job-a"); err != nil {
		t.Fatal(err)
	}
	h.e.RemoveConversation("c1")
	h.e.AddConversation("c1", "one again")
	if err := h.e.Frozen("c1"); err != nil {
		t.Errorf("a new conversation inherited the freeze: %v", err)
	}
}
