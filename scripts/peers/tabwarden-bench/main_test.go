package main

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent"
)

// The stand-in must answer every review the engine raises, including one
// queued behind a tab that is not on screen (it selects that tab first, as
// the operator would), and report each approval once.
func TestOperateApprovesEveryReview(t *testing.T) {
	const delay = time.Millisecond
	eng := consent.New(consent.Config{ReviewDelay: delay, ReviewTimeout: time.Minute, OpDeadline: time.Minute})
	defer eng.Close()
	eng.AddConversation("c1", "bench")
	eng.PutTab(consent.TabInfo{ID: "t1", Conversation: "c1", URL: "about:blank"})
	eng.PutTab(consent.TabInfo{ID: "t2", Conversation: "c1", URL: "about:blank"})
	eng.Select("c1", "t1")

	var buf bytes.Buffer
	out := newLineWriter(&buf)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opCtx, stopOp := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		operate(opCtx, eng, delay, out)
	}()

	// t2 is not the visible tab: its review waits in the queue until
	// selected.
	reqs := []consent.Request{
		{Gate: consent.GateRead, Conversation: "c1", Tab: "t2", Origin: "http://127.0.0.1:1"},
		{Gate: consent.GateNavigation, Conversation: "c1", Tab: "t1", Origin: "http://127.0.0.1:2"},
	}
	for _, req := range reqs {
		if err := eng.Ask(ctx, req); err != nil {
			t.Fatalf("%s review on %s: %v", req.Gate, req.Tab, err)
		}
	}
	stopOp()
	wg.Wait()

	var kinds []string
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var ev struct {
			Event, Kind, Tab string
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		if ev.Event != "approved" {
			t.Errorf("unexpected event %+v", ev)
		}
		kinds = append(kinds, ev.Kind+"@"+ev.Tab)
	}
	want := []string{"read@t2", "navigation@t1"}
	if len(kinds) != len(want) || kinds[0] != want[0] || kinds[1] != want[1] {
		t.Fatalf("approvals reported %v, want %v", kinds, want)
	}
}
