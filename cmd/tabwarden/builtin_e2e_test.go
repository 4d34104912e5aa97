package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/builtin"
	"github.com/tabwarden/tabwarden/agent/demo"
	"github.com/tabwarden/tabwarden/agent/llm"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
)

// The built-in agent end to end (design.md §12): its model is a loopback
// server speaking the provider's wire format and replaying recorded turns;
// the agent reaches the console's MCP server through the in-memory
// transport; every review is answered with keys in the real TUI; the
// fixture site is the witness.

type builtinCase struct {
	wire, model string
	stream      bool
	vision      bool
}

func TestBuiltinAgentOpenAIStreamVision(t *testing.T) {
	runBuiltinJourney(t, builtinCase{wire: "openai", model: "gpt-4o-mini", stream: true, vision: true})
}

func TestBuiltinAgentOpenAIJSONTextOnly(t *testing.T) {
	runBuiltinJourney(t, builtinCase{wire: "openai", model: "local-text-model", stream: false, vision: false})
}

func TestBuiltinAgentAnthropicStreamVision(t *testing.T) {
	runBuiltinJourney(t, builtinCase{wire: "anthropic", model: "claude-sonnet-4-5", stream: true, vision: true})
}

func runBuiltinJourney(t *testing.T, c builtinCase) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	r := startJourneyRig(t)
	w := r.world
	replay := startReplay(t, c.wire, loadTurns(t, "testdata/builtin/journey.json"),
		map[string]string{"site": w.site.URL, "second": w.second.URL})

	model, err := llm.New(r.ctx, llm.Config{
		Provider: c.wire, BaseURL: replay.URL(), Model: c.model, APIKey: "test-key",
		Stream: c.stream, MaxRetries: -1, Timeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if model.Vision() != c.vision {
		t.Fatalf("%s: vision %v, want %v", c.model, model.Vision(), c.vision)
	}
	b, err := startBuiltinWith(r.ctx, model, builtin.Config{MaxSteps: 20}, "Sign in on the fixture site (hand the sign-in to me), then save a draft titled 'Agent draft' and check it was saved.", r.eng, w.agents.server, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.stop)

	// The operator: deny the second origin, approve everything else, and
	// sign in by hand (then r) when the agent hands the browser over.
	var conv consent.ConversationID
	op := &jOperator{rig: r, site: w.site, second: w.second, handled: map[string]bool{}}
	op.judge = func(rev consent.Review) bool {
		conv = rev.Conversation
		op.conv = conv
		if rev.Kind == consent.KindNavigation && rev.Origin == w.site.URL && !op.signedIn && countReq(w.site, "POST", "/signin") != 0 {
			t.Errorf("the site saw a sign-in before the take-over")
		}
		if rev.Kind == consent.KindNavigation && rev.Origin == w.second.URL {
			return false
		}
		if rev.Kind == consent.KindDisclosure && saveRecords(w.site) != 1 {
			t.Errorf("at Share result the site saw %d saves, want 1", saveRecords(w.site))
		}
		if rev.Kind == consent.KindToolCall && saveRecords(w.site) != 0 {
			t.Errorf("save_draft reached the site before Allow once")
		}
		return true
	}
	done := make(chan error, 1)
	go func() { <-b.done; done <- nil }()
	if err := op.run(done); err != nil {
		t.Fatal(err)
	}
	for _, p := range replay.problems() {
		t.Errorf("provider server: %s", p)
	}
	reqs := replay.requests()
	if len(reqs) != 11 {
		t.Errorf("the provider saw %d requests, want the 11 recorded turns", len(reqs))
	}
	if !jHasActivity(r.eng.Snapshot(), "stopped after 11 steps: finished") {
		t.Errorf("the run did not finish cleanly in 11 steps")
	}
	if !op.signedIn {
		t.Errorf("the agent never handed the browser over for the sign-in")
	}
	if !jHasActivity(r.eng.Snapshot(), "model says (untrusted): Done: the draft is saved") {
		t.Errorf("the model's last message is not in the activity log")
	}

	// Witnesses.
	if n := countReq(w.site, "POST", "/signin"); n != 1 {
		t.Errorf("sign-ins = %d, want 1", n)
	}
	if n := saveRecords(w.site); n != 1 {
		t.Errorf("save_draft records = %d, want 1", n)
	}
	if n := w.second.Total(); n != 0 {
		t.Errorf("the denied origin saw %d requests", n)
	}
	for kind, n := range map[consent.ReviewKind]int{consent.KindNavigation: 3, consent.KindToolCall: 1, consent.KindDisclosure: 1} {
		if got := op.count[kind]; got != n {
			t.Errorf("%s reviews answered = %d, want %d", kind, got, n)
		}
	}
	if op.count[consent.KindRead] != 1 {
		t.Errorf("read reviews = %d, want 1", op.count[consent.KindRead])
	}

	// The audit: the agent's calls under its own conversation, and the
	// call after the denial is not the denied one again.
	var calls []audit.Record
	for _, rec := range r.log.Records() {
		if rec.Kind == audit.KindToolCall && consent.ConversationID(rec.Conversation) == conv {
			calls = append(calls, rec)
		}
	}
	var tools []string
	for _, rec := range calls {
		tools = append(tools, rec.Tool)
	}
	want := []string{"browser_open", "browser_open", "browser_observe", "browser_handoff", "browser_observe",
		"browser_open", "browser_observe", "webmcp_list_tools", "webmcp_call_tool", "browser_verify"}
	if strings.Join(tools, " ") != strings.Join(want, " ") {
		t.Fatalf("the agent's audited calls: %v, want %v", tools, want)
	}
	// The sign-in was the person's: the agent's calls never typed (no
	// browser_act at all) and never carried the password; the
	// hand-off followed the sign-in page's observation.
	for _, rec := range calls {
		if rec.Tool == "browser_act" || strings.Contains(rec.Input, demo.Password) {
			t.Errorf("the agent typed itself: %s %s", rec.Tool, rec.Input)
		}
	}
	signInCode := "" // text only: the page, its password field marked sensitive
	if c.vision {
		signInCode = "sign_in_required" // a password field on screen
	}
	if calls[2].Code != signInCode || calls[3].Code != "" {
		t.Errorf("the sign-in page's observation and hand-off: %+v then %+v", calls[2], calls[3])
	}
	if calls[0].Code != "user_denied" || calls[1].Code != "" || calls[1].Input == calls[0].Input {
		t.Errorf("after the denial: %+v then %+v", calls[0], calls[1])
	}
	if !strings.Contains(conversationName(r, conv), "built-in agent") {
		t.Errorf("conversation name %q does not say it is the built-in agent", conversationName(r, conv))
	}

	// Images: by capability, in exactly one request, never in a file.
	var withImage []int
	for i, q := range reqs {
		if hasImage(q.Body) {
			withImage = append(withImage, i)
		}
		if !c.vision && toolsOffer(t, c.wire, q.Body, "includeImage") {
			t.Errorf("request %d offers includeImage to a text-only model", i)
		}
	}
	if c.vision {
		// The sign-in page's observation (turn 2) is refused, so request 3
		// has no picture; the signed-in page's (turn 4) and the drafts
		// page's (turn 6) travel in requests 5 and 7, each once only.
		if fmt.Sprint(withImage) != "[5 7]" {
			t.Errorf("requests with an image: %v, want exactly [5 7]", withImage)
		} else {
			for _, i := range withImage {
				if !isImageContent(c.wire, reqs[i].Body) {
					t.Errorf("request %d carries the PNG but not as image content", i)
				}
				if n := bytes.Count(reqs[i].Body, []byte(pngB64)); n != 1 {
					t.Errorf("request %d carries %d images, want 1", i, n)
				}
			}
		}
		for _, rec := range calls {
			if rec.Tool == "browser_observe" && !strings.Contains(rec.Input, "includeImage") {
				t.Errorf("the vision model's observation did not ask for an image: %q", rec.Input)
			}
		}
	} else {
		if len(withImage) != 0 {
			t.Errorf("a text-only model was sent images in requests %v", withImage)
		}
		for _, rec := range calls {
			if rec.Tool == "browser_observe" && strings.Contains(rec.Input, "includeImage") {
				t.Errorf("a text-only model's observation asked for an image: %q", rec.Input)
			}
		}
	}
	for _, rec := range r.log.Records() {
		b, _ := json.Marshal(rec)
		if hasImage(b) {
			t.Errorf("an audit record carries image bytes: %.200s", b)
		}
	}
	_ = filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		if hasImage(b) || bytes.Contains(b, []byte("\x89PNG")) {
			t.Errorf("%s holds image bytes", path)
		}
		return nil
	})
}

func conversationName(r *jRig, id consent.ConversationID) string {
	for _, a := range r.eng.Snapshot().Activity {
		if a.Conversation == id && strings.Contains(a.Text, "MCP agent connected: ") {
			return a.Text
		}
	}
	return ""
}

// toolsOffer reports whether a request's tool definitions have a property
// named prop.
func toolsOffer(t *testing.T, wire string, body []byte, prop string) bool {
	var req struct {
		Tools []struct {
			Function struct {
				Parameters map[string]any `json:"parameters"`
			} `json:"function"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if len(req.Tools) == 0 {
		t.Fatalf("a request carries no tools")
	}
	for _, tl := range req.Tools {
		s := tl.Function.Parameters
		if wire == "anthropic" {
			s = tl.InputSchema
		}
		if props, _ := s["properties"].(map[string]any); props[prop] != nil {
			return true
		}
	}
	return false
}

// isImageContent reports whether the PNG rides as the wire format's image
// content rather than as text.
func isImageContent(wire string, body []byte) bool {
	if wire == "anthropic" {
		return bytes.Contains(body, []byte(`"type":"image"`)) && bytes.Contains(body, []byte(`"media_type":"image/png"`))
	}
	return bytes.Contains(body, []byte(`"image_url"`)) && bytes.Contains(body, []byte(`data:image/png;base64,`+pngB64))
}
