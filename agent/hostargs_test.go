package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// hostArgsBase is, per tool, arguments that decode: the call then fails
// (or succeeds) for reasons of its own, which adding a host's argument must
// not change.
var hostArgsBase = map[string]string{
	"browser_tabs":             `{}`,
	"browser_open":             `{"url":"http://127.0.0.1:1/"}`,
	"browser_navigate":         `{"tabId":"t1","action":"reload"}`,
	"browser_observe":          `{"tabId":"t1"}`,
	"browser_act":              `{"tabId":"t1","observationId":"o1","action":{"type":"click","ref":"e1"}}`,
	"browser_verify":           `{"tabId":"t1","assertion":"text_contains","value":"x"}`,
	"browser_handoff":          `{"tabId":"t1"}`,
	"browser_close":            `{"tabId":"t1"}`,
	"browser_upload":           `{"tabId":"t1","observationId":"o1","ref":"e1","filename":"a.txt","contentBase64":"aGk="}`,
	"browser_batch":            `{"tabId":"t1","steps":[{"verify":{"assertion":"text_contains","value":"x"}}]}`,
	"browser_job":              `{"jobId":"job-0"}`,
	"webmcp_list_tools":        `{"tabId":"t1"}`,
	"webmcp_call_tool":         `{"tabId":"t1","toolId":"x","input":{}}`,
	agent.WebUse.Tools[0].Name: `{"command":"list_pages"}`,
}

// withField adds "name":value to the JSON object base.
func withField(base, name, value string) json.RawMessage {
	if base == `{}` {
		return json.RawMessage(`{"` + name + `":` + value + `}`)
	}
	return json.RawMessage(`{"` + name + `":` + value + `,` + strings.TrimPrefix(base, `{`))
}

// TestHostAddedArgumentsIgnoredByEveryTool: Gemini CLI sends
// wait_for_previous to every tool; each tool answers as if it were absent,
// while any other unknown argument stays invalid_action (design.md §5).
func TestHostAddedArgumentsIgnoredByEveryTool(t *testing.T) {
	const conv consent.ConversationID = "host-args"
	d := argsDispatcher(t, conv)

	var tools []string
	for _, p := range agent.Profiles {
		for _, tool := range p.Tools {
			tools = append(tools, tool.Name)
		}
	}
	call := func(tool string, args json.RawMessage) agent.Result {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return d.Call(ctx, conv, tool, args)
	}
	for _, tool := range tools {
		base, ok := hostArgsBase[tool]
		if !ok {
			t.Fatalf("%s: no base arguments in this test; add them", tool)
		}
		plain := call(tool, json.RawMessage(base))
		if plain.Code() == string(errcode.InvalidAction) {
			t.Fatalf("%s %s: the base arguments do not decode: %s", tool, base, plain.JSON())
		}
		for _, name := range agent.HostAddedArgs {
			for _, value := range []string{`true`, `false`, `"yes"`, `{"x":1}`} {
				got := call(tool, withField(base, name, value))
				if got.Code() != plain.Code() || got.IsError != plain.IsError {
					t.Errorf("%s with %s=%s: %s; without it: %s", tool, name, value, got.JSON(), plain.JSON())
				}
			}
		}
		bogus := call(tool, withField(base, "wait_for_previous_x", `true`))
		if bogus.Code() != string(errcode.InvalidAction) || !strings.Contains(bogus.JSON(), "wait_for_previous_x") {
			t.Errorf("%s with an unknown argument: want invalid_action naming it, got %s", tool, bogus.JSON())
		}
	}
}

// An argument of the wrong shape is named in the schema's words, never the
// decoder's Go types (a walk met "cannot unmarshal string into Go struct
// field ActArgs.action of type agent.ActAction").
func TestWrongArgumentShapeSaysWhatTheSchemaWants(t *testing.T) {
	const conv consent.ConversationID = "arg-shape"
	d := argsDispatcher(t, conv)
	for _, tc := range []struct{ tool, args, want string }{
		{"browser_act", `{"tabId":"t1","observationId":"o1","action":"click"}`, `argument \"action\" must be an object, not string`},
		{"browser_batch", `{"tabId":"t1","steps":{"click":1}}`, `argument \"steps\" must be an array, not object`},
		{"browser_open", `["http://x"]`, `the arguments must be an object, not array`},
		{"browser_open", `{"url":`, `not valid JSON`},
	} {
		got := d.Call(context.Background(), conv, tc.tool, json.RawMessage(tc.args))
		js := got.JSON()
		if got.Code() != string(errcode.InvalidAction) || !strings.Contains(js, tc.want) {
			t.Errorf("%s %s: want invalid_action saying %s, got %s", tc.tool, tc.args, tc.want, js)
		}
		for _, goish := range []string{"Go struct", "agent.", "unmarshal"} {
			if strings.Contains(js, goish) {
				t.Errorf("%s %s: the message speaks Go (%q): %s", tc.tool, tc.args, goish, js)
			}
		}
	}
}

// argsDispatcher is a dispatcher with conversation conv and no browser:
// for what a tool answers to its arguments before any page is reached.
func argsDispatcher(t *testing.T, conv consent.ConversationID) *agent.Dispatcher {
	t.Helper()
	eng := consent.New(consent.Config{ReviewDelay: reviewDelay})
	t.Cleanup(eng.Close)
	eng.AddConversation(conv, string(conv))
	d := agent.NewDispatcher(agent.DispatcherConfig{Engine: eng, Browser: stacktest.GoneBrowser{}})
	t.Cleanup(d.Close)
	return d
}
