package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/builtin"
	"github.com/tabwarden/tabwarden/agent/llm"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/consent"
)

// tabsThenDone is a model that lists the tabs once and then finishes: a
// task that ends by itself, as a newcomer's first task does.
type tabsThenDone struct{ turns atomic.Int32 }

func (m *tabsThenDone) Turn(_ context.Context, req llm.Request, _ func(string)) (llm.Turn, error) {
	m.turns.Add(1)
	last := req.Messages[len(req.Messages)-1]
	if last.Role == llm.RoleTool {
		return llm.Turn{Text: "There are no tabs.", Finish: "stop"}, nil
	}
	return llm.Turn{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "browser_tabs", Input: json.RawMessage(`{}`)}}, Finish: "tool-calls"}, nil
}
func (m *tabsThenDone) Name() string                      { return "test/tabs-then-done" }
func (m *tabsThenDone) Vision() bool                      { return false }
func (m *tabsThenDone) Price() (in, out float64, ok bool) { return 0, 0, false }

// The README says the operator's second task (p) runs as `builtin-2`. It
// must be so on the screen even when the first task has already finished
// and its name is free again: the n-th task is builtin-n, and the activity
// log's start line names it.
func TestSecondTaskIsBuiltin2(t *testing.T) {
	eng := consent.New(consent.Config{})
	t.Cleanup(eng.Close)
	surface := agent.SurfaceFunc(func(context.Context, consent.ConversationID, string, json.RawMessage) agent.Result {
		return agent.Result{Object: map[string]any{"ok": true, "tabs": []any{}}}
	})
	srv, err := mcpserver.New(mcpserver.Config{Surface: surface, Engine: eng, Listen: "127.0.0.1:0", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := newBuiltinAgents(ctx, &tabsThenDone{}, builtin.Config{MaxSteps: 5}, eng, srv)
	t.Cleanup(a.stop)

	names := map[string]bool{} // every conversation name the screen was given
	seen := func() {
		for _, c := range eng.Snapshot().Conversations {
			names[c.Name] = true
		}
	}
	for task := 1; task <= 3; task++ {
		if err := a.start("List my tabs."); err != nil {
			t.Fatal(err)
		}
		// Wait for this task to finish before the next, so its name is free.
		a.mu.Lock()
		run := a.runs[len(a.runs)-1]
		a.mu.Unlock()
		ch, stop := eng.Changes()
		for done := false; !done; {
			seen()
			select {
			case <-run.done:
				done = true
			case <-ch:
			case <-ctx.Done():
				stop()
				t.Fatalf("task %d did not finish", task)
			}
		}
		stop()
		if want := builtinName(task); run.name != want {
			t.Errorf("task %d runs as %q, want %q", task, run.name, want)
		}
	}
	for _, want := range []string{"builtin · ", "builtin-2 · ", "builtin-3 · "} {
		found := false
		for n := range names {
			found = found || strings.HasPrefix(n, want)
		}
		if !found {
			t.Errorf("no conversation named %q…; the screen showed %v", want, names)
		}
	}
	var starts, stops []string
	for _, l := range eng.Snapshot().Activity {
		if strings.Contains(l.Text, "starting on") {
			starts = append(starts, l.Text)
		}
		if strings.Contains(l.Text, "stopped after") {
			stops = append(stops, l.Text)
		}
	}
	if len(stops) != 3 || !strings.HasPrefix(stops[1], "built-in agent builtin-2 stopped after 2 steps") {
		t.Errorf("activity stop lines %q", stops)
	}
	if len(starts) != 3 || !strings.Contains(starts[1], "built-in agent builtin-2 (test/tabs-then-done) starting on") {
		t.Errorf("activity start lines %q", starts)
	}
}
