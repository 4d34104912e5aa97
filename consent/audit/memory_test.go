package audit

import (
	"context"
	"errors"
	"testing"
)

func TestMemory(t *testing.T) {
	var m Memory
	var sink Sink = &m
	if err := sink.Write(Record{Kind: KindDecision, Review: "r1"}); err != nil {
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
	if err := m.Write(Record{Kind: KindDecision}); !errors.Is(err, boom) {
		t.Fatalf("Write = %v, want injected error", err)
	}
	if len(m.Records()) != 1 {
		t.Fatal("a failed write must record nothing")
	}
	m.FailWith(nil)
	if err := m.Write(Record{Kind: KindResume}); err != nil {
		t.Fatal(err)
	}
}

func TestMemoryWaitFor(t *testing.T) {
	var m Memory
	if err := m.Write(Record{Kind: KindReviewShown}); err != nil {
		t.Fatal(err)
	}
	isDecision := func(r Record) bool { return r.Kind == KindDecision }

	// Already written records count.
	if r, err := m.WaitFor(context.Background(), func(r Record) bool { return r.Kind == KindReviewShown }); err != nil || r.Kind != KindReviewShown {
		t.Fatalf("WaitFor existing = %+v, %v", r, err)
	}

	done := make(chan Record)
	go func() {
		r, err := m.WaitFor(context.Background(), isDecision)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	if err := m.Write(Record{Kind: KindTakeOver}); err != nil {
		t.Fatal(err)
	}
	if err := m.Write(Record{Kind: KindDecision, Review: "r9"}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.Review != "r9" {
		t.Fatalf("WaitFor = %+v", r)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.WaitFor(ctx, func(r Record) bool { return r.Kind == KindSession }); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFor on done ctx = %v", err)
	}
}
