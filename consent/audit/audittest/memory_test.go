package audittest

import (
	"context"
	"errors"
	"testing"

	"github.com/tabwarden/tabwarden/consent/audit"
)

func TestMemory(t *testing.T) {
	var m Memory
	var sink audit.Sink = &m
	if err := sink.Write(audit.Record{Kind: audit.KindDecision, Review: "r1"}); err != nil {
		t.Fatal(err)
	}
	got := m.Records()
	got[0].Review = "mutated"
	if m.Records()[0].Review != "r1" {
		t.Fatal("Records must return a copy")
	}
	if !m.Records()[0].Time.IsZero() {
		t.Fatal("Memory must store records as given")
	}

	boom := errors.New("disk full")
	m.FailWith(boom)
	if err := m.Write(audit.Record{Kind: audit.KindDecision}); !errors.Is(err, boom) {
		t.Fatalf("Write = %v, want injected error", err)
	}
	if len(m.Records()) != 1 {
		t.Fatal("a failed write must record nothing")
	}
	m.FailWith(nil)
	if err := m.Write(audit.Record{Kind: audit.KindResume}); err != nil {
		t.Fatal(err)
	}
}

func TestMemoryWaitFor(t *testing.T) {
	var m Memory
	if err := m.Write(audit.Record{Kind: audit.KindReviewShown}); err != nil {
		t.Fatal(err)
	}
	isDecision := func(r audit.Record) bool { return r.Kind == audit.KindDecision }

	// Already written records count.
	if r, err := m.WaitFor(context.Background(), func(r audit.Record) bool { return r.Kind == audit.KindReviewShown }); err != nil || r.Kind != audit.KindReviewShown {
		t.Fatalf("WaitFor existing = %+v, %v", r, err)
	}

	done := make(chan audit.Record)
	go func() {
		r, err := m.WaitFor(context.Background(), isDecision)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	if err := m.Write(audit.Record{Kind: audit.KindTakeOver}); err != nil {
		t.Fatal(err)
	}
	if err := m.Write(audit.Record{Kind: audit.KindDecision, Review: "r9"}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.Review != "r9" {
		t.Fatalf("WaitFor = %+v", r)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.WaitFor(ctx, func(r audit.Record) bool { return r.Kind == audit.KindSession }); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFor on done ctx = %v", err)
	}
}

func TestMemoryKind(t *testing.T) {
	var m Memory
	for _, r := range []audit.Record{
		{Kind: audit.KindDecision, Review: "r1"},
		{Kind: audit.KindReviewShown, Review: "r2"},
		{Kind: audit.KindDecision, Review: "r3"},
	} {
		if err := m.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	got := m.Kind(audit.KindDecision)
	if len(got) != 2 || got[0].Review != "r1" || got[1].Review != "r3" {
		t.Fatalf("Kind(decision) = %+v, want r1 then r3", got)
	}
	if n := len(m.Kind(audit.KindSession)); n != 0 {
		t.Fatalf("Kind(session) = %d records, want none", n)
	}
}
