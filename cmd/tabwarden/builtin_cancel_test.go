package main

import (
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/builtin"
	"github.com/tabwarden/tabwarden/agent/llm"
	"github.com/tabwarden/tabwarden/consent"
)

// `x` in the real TUI on the built-in agent's conversation stops the agent:
// its pending open resolves canceled, the site never sees a request, and
// the model is never asked again.
func TestBuiltinAgentStopsOnCancelKey(t *testing.T) {
	r := startJourneyRig(t)
	w := r.world
	replay := startReplay(t, "openai", loadTurns(t, "testdata/builtin/cancel.json"), map[string]string{"site": w.site.URL})
	model, err := llm.New(r.ctx, llm.Config{Provider: "openai", BaseURL: replay.URL(), Model: "local-text-model", APIKey: "k", Stream: true, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := startBuiltinWith(r.ctx, model, builtin.Config{}, "Open the drafts page.", r.eng, w.agents.server, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.stop)
	op := &jOperator{rig: r, site: w.site, second: w.second, handled: map[string]bool{}}
	// Bring the review to front as the operator would, then press x.
	var rev consent.Review
	op.waitUntil(60*time.Second, func(st consent.State) bool {
		if len(st.Queue) > 0 {
			rev = st.Queue[0]
			return true
		}
		return false
	})
	if rev.ID == "" {
		t.Fatal("no review came")
	}
	// Step 1 is the conversation's like every later step, not the console's.
	if !op.waitUntil(30*time.Second, func(st consent.State) bool {
		for _, a := range st.Activity {
			if strings.HasPrefix(a.Text, "step 1 · browser_open") {
				return true
			}
		}
		return false
	}) {
		t.Fatal("no step 1 line in the activity")
	}
	for _, a := range r.eng.Snapshot().Activity {
		if strings.HasPrefix(a.Text, "step 1 · browser_open") && a.Conversation != rev.Conversation {
			t.Errorf("step 1 is attributed to %q, want the conversation %q", a.Conversation, rev.Conversation)
		}
	}
	op.bringToFront(rev)
	op.waitUntil(5*time.Second, func(st consent.State) bool { return st.Focused != nil && st.Focused.ID == rev.ID })
	// x acts on the conversation the screen has selected; the engine's
	// state can be ahead of the screen (a snapshot read before the
	// selection moved may still be drawn), so press it once the screen
	// marks the built-in agent's row, as the operator would.
	var label string
	for _, c := range r.eng.Snapshot().Conversations {
		if c.ID == rev.Conversation {
			label = c.Name
			if label == "" {
				label = string(c.ID)
			}
		}
	}
	if !r.waitScreen(10*time.Second, func(screen string) bool {
		// The row may be cut at the screen's width: its first part is
		// the conversation's own name.
		first, _, _ := strings.Cut(label, " · ")
		return first != "" && strings.Contains(screen, "▸ "+first)
	}) {
		t.Fatalf("the screen never selected %q", label)
	}
	op.key("x")
	select {
	case <-b.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not stop on x")
	}
	if !jHasActivity(r.eng.Snapshot(), "stopped by the operator") {
		t.Error("the activity log does not say the operator stopped the agent")
	}
	if n := w.site.Total(); n != 0 {
		t.Errorf("the site saw %d requests after the cancelled open", n)
	}
	if n := len(replay.requests()); n != 1 {
		t.Errorf("the provider was asked %d times, want 1", n)
	}
	for _, p := range replay.problems() {
		t.Errorf("provider server: %s", p)
	}
}
