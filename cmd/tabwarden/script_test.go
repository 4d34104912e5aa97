package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

func scriptFile(name string) string { return filepath.Join("..", "..", "testdata", "scripts", name) }

func TestLoadScriptMapsEveryPanelKind(t *testing.T) {
	steps, err := loadScript(scriptFile("all-panels.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 13 {
		t.Fatalf("%d steps, want 13", len(steps))
	}
	if steps[0].after != 200*time.Millisecond || steps[0].Name != "agent-1" {
		t.Errorf("first step: after %v name %q", steps[0].after, steps[0].Name)
	}
	if steps[2].Name != "c1" {
		t.Errorf("a step without a name is named after its conversation, got %q", steps[2].Name)
	}
	click := steps[2].Action
	if click == nil || click.Type != consent.ActionClick || click.Ref != "e12" || click.Role != "button" || click.Name != "Add to cart" {
		t.Errorf("click: %+v", click)
	}
	if fill := steps[3].Action; fill.Type != consent.ActionFill || fill.Text != "3" {
		t.Errorf("fill: %+v", fill)
	}
	if sel := steps[4].Action; sel.Label != "M" {
		t.Errorf("select: %+v", sel)
	}
	if key := steps[5].Action; key.Key != "Enter" {
		t.Errorf("key: %+v", key)
	}
	if scroll := steps[6].Action; scroll.DeltaY != 600 {
		t.Errorf("scroll: %+v", scroll)
	}
	if xy := steps[7].Action; !xy.Coordinate || xy.X != 120 || xy.Y != 48 {
		t.Errorf("coordinate click: %+v", xy)
	}
	if len(steps[8].Plan) != 2 || steps[8].opName() != "browser_batch" {
		t.Errorf("plan: %+v", steps[8].Plan)
	}
	if up := steps[9].Upload; up == nil || up.Filename != "report.pdf" || up.Size != 48213 {
		t.Errorf("upload: %+v", up)
	}
	if tc := steps[10].ToolCall; tc == nil || tc.ToolName != "save_draft" || !strings.Contains(tc.InputSummary, "[redacted]") {
		t.Errorf("tool call: %+v", tc)
	}
	d := steps[11].Disclosure
	const result = `{"saved":1,"id":"d-17"}`
	// sha256 of the result, computed when the script leaves it out.
	if d == nil || d.Size != len(result) || d.SHA256 != "a9c8b3bc0b4802a0bd12efb795d1a259aa0d236ed844b4178168736b8398bd82" {
		t.Errorf("disclosure: %+v", d)
	}
	if !steps[12].Background {
		t.Error("background flag lost")
	}
}

func TestLoadScriptRejects(t *testing.T) {
	for name, line := range map[string]string{
		"unknown gate":              `{"conversation":"c","tab":"t","gate":"teleport","origin":"https://a.test"}`,
		"missing origin":            `{"conversation":"c","tab":"t","gate":"read"}`,
		"missing conversation":      `{"tab":"t","gate":"read","origin":"https://a.test"}`,
		"bad after":                 `{"after":"soon","conversation":"c","tab":"t","gate":"read","origin":"https://a.test"}`,
		"negative after":            `{"after":"-1s","conversation":"c","tab":"t","gate":"read","origin":"https://a.test"}`,
		"unknown field":             `{"conversation":"c","tab":"t","gate":"read","origin":"https://a.test","orign":"x"}`,
		"action without detail":     `{"conversation":"c","tab":"t","gate":"action","origin":"https://a.test"}`,
		"navigation with action":    `{"conversation":"c","tab":"t","gate":"navigation","origin":"https://a.test","action":{"type":"click"}}`,
		"disclosure without result": `{"conversation":"c","tab":"t","gate":"disclosure","origin":"https://a.test","toolCall":{"toolName":"x"}}`,
		"not json":                  `gate: read`,
	} {
		p := filepath.Join(t.TempDir(), "s.jsonl")
		if err := os.WriteFile(p, []byte("# comment\n\n"+line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := loadScript(p)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), "s.jsonl:3") {
			t.Errorf("%s: error does not name the line: %v", name, err)
		}
	}
	p := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(p, []byte("# nothing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadScript(p); err == nil {
		t.Error("a script with no requests was accepted")
	}
}

func hasActivity(text string) func(consent.State) bool {
	return func(s consent.State) bool {
		for _, a := range s.Activity {
			if a.Text == text {
				return true
			}
		}
		return false
	}
}

func TestFeedScriptNotesOutcomes(t *testing.T) {
	for _, tc := range []struct {
		approve bool
		want    string
	}{
		{true, "script outcome: navigation https://a.test approved"},
		{false, "script outcome: navigation https://a.test denied (user_denied)"},
	} {
		steps, err := loadScript(scriptFile("keyahead.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		eng := consent.New(consent.Config{Profile: consent.ProfileStrict, ReviewDelay: time.Nanosecond})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { feedScript(ctx, eng, steps); close(done) }()

		s := stacktest.WaitState(t, eng, "the navigation review", func(s consent.State) bool { return s.Focused != nil })
		if s.Focused.Kind != consent.KindNavigation || s.Focused.Origin != "https://a.test" || s.Focused.Tab != "t1" {
			t.Fatalf("focused review: %+v", s.Focused)
		}
		if err := eng.Decide(s.Focused.ID, tc.approve); err != nil {
			t.Fatal(err)
		}
		s = stacktest.WaitState(t, eng, tc.want, hasActivity(tc.want))
		<-done // the script has one step: the feeder is finished
		cancel()
		if len(s.Conversations) != 1 || s.Conversations[0].Name != "agent-1" {
			t.Fatalf("conversations: %+v", s.Conversations)
		}
		tab := s.Conversations[0].Tabs[0]
		if wantURL := map[bool]string{true: "https://a.test/", false: "about:blank"}[tc.approve]; tab.URL != wantURL {
			t.Errorf("approve=%v: tab URL %q, want %q (navigation happens only after consent)", tc.approve, tab.URL, wantURL)
		}
	}
}

func TestFeedScriptStopsWithContext(t *testing.T) {
	steps, err := loadScript(scriptFile("keyahead.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	eng := consent.New(consent.Config{ReviewDelay: time.Nanosecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { feedScript(ctx, eng, steps); close(done) }()
	stacktest.WaitState(t, eng, "the review", func(s consent.State) bool { return s.Focused != nil })
	cancel() // the operator quits with a review pending
	<-done
	if s := eng.Snapshot(); hasActivity("script outcome: navigation https://a.test approved")(s) {
		t.Error("a cancelled script recorded an approval")
	}
}
