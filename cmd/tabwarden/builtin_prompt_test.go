package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/tui"
)

// A console started with provider settings (startBuiltin, as `tabwarden
// run` does) against the loopback provider: while the run's own agent
// waits on its navigation review, the operator presses p and types a new
// task into the real TUI, a's and d's included. The typed keys decide
// nothing (the review stays pending and the site sees nothing); enter
// starts a second built-in agent conversation on the typed task, whose own
// open waits on its own review until the operator's key. The fixture site
// is the witness.
func TestBuiltinAgentTaskFromPrompt(t *testing.T) {
	var agents *builtinAgents
	var replay *replayServer
	r := startJourneyRigTUI(t, consent.ProfileStrict, func(r *jRig, o *tui.Options) {
		replay = startReplay(t, "openai", loadTurns(t, "testdata/builtin/prompt.json"), map[string]string{"site": r.world.site.URL})
		t.Setenv("OPENAI_API_KEY", "")
		ro := &runOptions{task: "Open the dispatch page.", provider: "openai", baseURL: replay.URL(), model: "local-text-model", maxSteps: 5, stream: true}
		var err error
		if agents, err = startBuiltin(r.ctx, ro, r.eng, r.world.agents.server); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(agents.stop)
		o.StartTask = agents.start
	})
	w := r.world
	op := &jOperator{rig: r, site: w.site, second: w.second, handled: map[string]bool{}}
	const page = "/e2e/act.html"

	// The run's agent asks to open the page; bring its review to front.
	var first consent.Review
	op.waitUntil(60*time.Second, func(st consent.State) bool {
		if len(st.Queue) > 0 {
			first = st.Queue[0]
			return true
		}
		return false
	})
	if first.ID == "" {
		t.Fatal("the run's agent never asked to open the page")
	}
	op.bringToFront(first)
	op.waitUntil(5*time.Second, func(st consent.State) bool { return st.Focused != nil && st.Focused.ID == first.ID })
	time.Sleep(journeyDelay + 100*time.Millisecond) // past the key-ahead guard: an a would count

	// p, the task (a and d among its letters), enter.
	const task = "add a draft today and open the dispatch page"
	op.key("p")
	for _, c := range task {
		op.key(string(c))
	}
	r.tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	var second consent.Review
	op.waitUntil(60*time.Second, func(st consent.State) bool {
		for _, q := range st.Queue {
			if q.Conversation != first.Conversation {
				second = q
				return true
			}
		}
		return false
	})
	if second.ID == "" {
		t.Fatal("the task given with p never reached a review")
	}
	if !inQueue(r.eng.Snapshot(), first.ID) {
		t.Fatal("typing the task decided the review that was on screen")
	}
	if n := w.site.Count(page); n != 0 {
		t.Fatalf("the site saw %d page loads before any approval", n)
	}
	if !bytes.Contains(replayBodies(replay), []byte(task)) {
		t.Fatal("the typed task never reached the model")
	}

	// Both opens wait on the operator's keys, one at a time.
	op.count = map[consent.ReviewKind]int{}
	op.press(first, "a")
	op.waitUntil(30*time.Second, func(consent.State) bool { return w.site.Count(page) == 1 })
	if n := w.site.Count(page); n != 1 {
		t.Fatalf("after the first approval the site saw %d page loads, want 1", n)
	}
	op.bringToFront(second)
	op.waitUntil(5*time.Second, func(st consent.State) bool { return st.Focused != nil && st.Focused.ID == second.ID })
	op.press(second, "a")
	op.waitUntil(60*time.Second, func(st consent.State) bool {
		n := 0
		for _, a := range st.Activity {
			if strings.Contains(a.Text, "stopped after 2 steps: finished") {
				n++
			}
		}
		return n == 2
	})
	if n := w.site.Count(page); n != 2 {
		t.Errorf("the site saw %d page loads, want 2 (one per approved open)", n)
	}

	// Two conversations, each the built-in agent's, each with its open.
	opens := map[string]string{}
	for _, rec := range r.log.Records() {
		if rec.Kind == audit.KindToolCall && rec.Tool == "browser_open" {
			opens[rec.Conversation] = rec.Code
		}
	}
	if len(opens) != 2 || opens[string(first.Conversation)] != "" || opens[string(second.Conversation)] != "" {
		t.Errorf("audited opens by conversation: %v, want one clean open in each of %s and %s", opens, first.Conversation, second.Conversation)
	}
	for _, c := range []consent.ConversationID{first.Conversation, second.Conversation} {
		if name := conversationName(r, c); !strings.Contains(name, "built-in agent") {
			t.Errorf("conversation %s is named %q", c, name)
		}
	}
	for _, p := range replay.problems() {
		t.Errorf("provider server: %s", p)
	}
	if n := len(replay.requests()); n != 4 {
		t.Errorf("the provider saw %d requests, want 4 (two turns per task)", n)
	}
}

func replayBodies(r *replayServer) []byte {
	var all []byte
	for _, q := range r.requests() {
		all = append(all, q.Body...)
	}
	return all
}
