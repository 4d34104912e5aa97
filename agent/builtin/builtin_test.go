package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent/llm"
)

// These unit tests drive the loop with a scripted Model against a real MCP
// server over the in-memory transport; the provider wire is covered end to
// end in cmd/tabwarden.

type scripted struct {
	mu    sync.Mutex
	turns []llm.Turn
	reqs  []llm.Request
}

func (s *scripted) Turn(_ context.Context, req llm.Request, _ func(string)) (llm.Turn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	if len(s.turns) == 0 {
		return llm.Turn{Text: "done", Usage: llm.Usage{Input: 10, Output: 1}}, nil
	}
	t := s.turns[0]
	s.turns = s.turns[1:]
	return t, nil
}
func (s *scripted) Name() string                    { return "test/scripted" }
func (s *scripted) Vision() bool                    { return false }
func (s *scripted) Price() (float64, float64, bool) { return 0, 0, false }

type actArgs struct {
	Ref string `json:"ref"`
}

// session serves one tool, act, that answers mayHaveChangedState:true, and
// counts its calls.
func session(t *testing.T, calls *int) *mcp.ClientSession {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "act"}, func(ctx context.Context, req *mcp.CallToolRequest, a actArgs) (*mcp.CallToolResult, any, error) {
		*calls++
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: `{"ok":false,"code":"timeout","dispatched":true,"mayHaveChangedState":true}`}}}, nil, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(id, ref string) llm.Turn {
	b, _ := json.Marshal(map[string]string{"ref": ref})
	return llm.Turn{ToolCalls: []llm.ToolCall{{ID: id, Name: "act", Input: b}}, Usage: llm.Usage{Input: 100, Output: 10}}
}

func TestNeverRepeatsAnUncertainAction(t *testing.T) {
	var n int
	m := &scripted{turns: []llm.Turn{call("1", "e1"), call("2", "e1"), call("3", "e2")}}
	out := Run(context.Background(), Config{Model: m, Session: session(t, &n)}, "task")
	if out.Reason != "finished" || out.Err != nil {
		t.Fatalf("outcome %+v", out)
	}
	if n != 2 {
		t.Errorf("the tool ran %d times, want 2 (e1 once, e2 once)", n)
	}
	// The model was told why its repeat was not sent.
	last := m.reqs[2].Messages[len(m.reqs[2].Messages)-1].Result
	if last == nil || !last.IsError || !strings.Contains(last.Text, "mayHaveChangedState") {
		t.Errorf("the repeat's result: %+v", last)
	}
	// The console's own envelope reached the model verbatim.
	first := m.reqs[1].Messages[len(m.reqs[1].Messages)-1].Result
	if first == nil || !strings.Contains(first.Text, `"code":"timeout"`) {
		t.Errorf("the first result: %+v", first)
	}
}

func TestStepLimitAndTokenBudget(t *testing.T) {
	var n int
	many := func() []llm.Turn {
		var ts []llm.Turn
		for i := range 10 {
			ts = append(ts, call(string(rune('a'+i)), "e"+string(rune('a'+i))))
		}
		return ts
	}
	out := Run(context.Background(), Config{Model: &scripted{turns: many()}, Session: session(t, &n), MaxSteps: 3}, "task")
	if !strings.Contains(out.Reason, "step limit") || out.Steps != 3 || n != 3 {
		t.Errorf("step limit: %+v after %d calls", out, n)
	}
	n = 0
	out = Run(context.Background(), Config{Model: &scripted{turns: many()}, Session: session(t, &n), MaxTokens: 250}, "task")
	if !strings.Contains(out.Reason, "token budget") || out.Steps != 3 || out.Usage.Total() != 330 {
		t.Errorf("token budget: %+v", out)
	}
}

func TestTextOnlyModelIsNotOfferedImages(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	type obs struct {
		TabID        string `json:"tabId,omitempty"`
		IncludeImage bool   `json:"includeImage,omitempty"`
	}
	var got []bool
	mcp.AddTool(srv, &mcp.Tool{Name: "browser_observe"}, func(ctx context.Context, req *mcp.CallToolRequest, a obs) (*mcp.CallToolResult, any, error) {
		got = append(got, a.IncludeImage)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"ok":true}`}}}, nil, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, _ := srv.Connect(context.Background(), st, nil)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	m := &scripted{turns: []llm.Turn{{ToolCalls: []llm.ToolCall{{ID: "1", Name: "browser_observe", Input: json.RawMessage(`{"includeImage":true}`)}}}}}
	Run(context.Background(), Config{Model: m, Session: cs}, "task")
	if len(got) != 1 || got[0] {
		t.Errorf("observations asked for images: %v", got)
	}
	props, _ := m.reqs[0].Tools[0].Schema["properties"].(map[string]any)
	if _, ok := props["includeImage"]; ok || props == nil {
		t.Errorf("the tool offered to a text-only model: %+v", m.reqs[0].Tools[0].Schema)
	}
}

// failing is a model whose provider refuses every turn.
type failing struct{ scripted }

func (f *failing) Turn(context.Context, llm.Request, func(string)) (llm.Turn, error) {
	return llm.Turn{}, errors.New("401 unauthorized")
}

// A provider that fails the very first turn ended the run before any
// step: the operator is not told a step was taken.
func TestProviderFailureIsNoStep(t *testing.T) {
	var n int
	out := Run(context.Background(), Config{Model: &failing{}, Session: session(t, &n)}, "task")
	if out.Err == nil || !strings.Contains(out.Reason, "model provider failed") || out.Steps != 0 || n != 0 {
		t.Errorf("a failed first turn: %+v after %d calls", out, n)
	}
}
