package fakemodel

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"charm.land/fantasy"
	"charm.land/fantasy/providers/anthropic"
	"charm.land/fantasy/providers/openai"
)

type openArgs struct {
	URL string `json:"url"`
}

// Each OpenAI and Anthropic wire format is read by that vendor's own SDK
// (through fantasy, which drives anthropic-sdk-go and openai-go; the Gemini
// wire is read by the real Gemini CLI in the real-hosts test, as genai is not
// a dependency here): the scripted tool calls
// arrive with their arguments, in order, each after the previous result,
// and the turn ends with the script's text; the server saw the results the
// SDK sent back.
func TestVendorSDKsReadEachWire(t *testing.T) {
	const url = "http://127.0.0.1:1/page"
	script := Script{Steps: []Step{{Tool: "browser_tabs"}, {Tool: "browser_open", Args: map[string]any{"url": url}}}, Final: "All done."}
	cases := []struct {
		wire Wire
		dial func(base string) (fantasy.Provider, error)
	}{
		{Anthropic, func(base string) (fantasy.Provider, error) {
			return anthropic.New(anthropic.WithBaseURL(base), anthropic.WithAPIKey("k"))
		}},
		{Responses, func(base string) (fantasy.Provider, error) {
			return openai.New(openai.WithBaseURL(base+"/v1"), openai.WithAPIKey("k"), openai.WithUseResponsesAPI(), openai.WithResponsesAPIFunc(func(string) bool { return true }))
		}},
		{Chat, func(base string) (fantasy.Provider, error) {
			return openai.New(openai.WithBaseURL(base+"/v1"), openai.WithAPIKey("k"))
		}},
	}
	for _, c := range cases {
		t.Run(string(c.wire), func(t *testing.T) {
			srv, err := Start(script)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			p, err := c.dial(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			model, err := p.LanguageModel(ctx, "fake-model")
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var calls []string
			tabs := fantasy.NewAgentTool("browser_tabs", "list tabs", func(_ context.Context, _ struct{}, _ fantasy.ToolCall) (fantasy.ToolResponse, error) {
				mu.Lock()
				calls = append(calls, "tabs")
				mu.Unlock()
				return fantasy.NewTextResponse(`{"ok":true,"tabs":[]}`), nil
			})
			open := fantasy.NewAgentTool("browser_open", "open a page", func(_ context.Context, in openArgs, _ fantasy.ToolCall) (fantasy.ToolResponse, error) {
				mu.Lock()
				calls = append(calls, "open "+in.URL)
				mu.Unlock()
				return fantasy.NewTextResponse(`{"ok":true,"tabId":"t1"}`), nil
			})
			agent := fantasy.NewAgent(model, fantasy.WithTools(tabs, open))
			res, err := agent.Stream(ctx, fantasy.AgentStreamCall{Prompt: "open the page"})
			if err != nil {
				t.Fatalf("stream: %v\nrequests: %+v\nunknown: %v", err, srv.Requests(), srv.Unknown())
			}
			if want := []string{"tabs", "open " + url}; !slices.Equal(calls, want) {
				t.Errorf("tool calls %q, want %q", calls, want)
			}
			if got := res.Response.Content.Text(); got != script.Final {
				t.Errorf("final text %q, want %q", got, script.Final)
			}
			got := srv.Results()
			if len(got) != 2 || !strings.Contains(got[0], `"tabs":[]`) || !strings.Contains(got[1], `"tabId":"t1"`) {
				t.Errorf("the server saw results %q", got)
			}
			for _, r := range srv.Requests() {
				if r.Wire != c.wire || !r.Stream {
					t.Errorf("request %+v: want a streamed %s request", r, c.wire)
				}
			}
		})
	}
}

// A request that offers none of the script's tools is a host's side
// request: it gets text, or the smallest object its JSON schema accepts.
func TestSideRequests(t *testing.T) {
	srv, err := Start(Script{Steps: []Step{{Tool: "browser_tabs"}}, Final: "done"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	schema := map[string]any{"type": "OBJECT", "required": []any{"next_speaker", "reasoning"}, "properties": map[string]any{
		"next_speaker": map[string]any{"type": "STRING", "enum": []any{"user", "model"}},
		"reasoning":    map[string]any{"type": "STRING"},
	}}
	b, _ := json.Marshal(smallest(schema))
	if string(b) != `{"next_speaker":"user","reasoning":""}` {
		t.Errorf("smallest: %s", b)
	}
	p, err := anthropic.New(anthropic.WithBaseURL(srv.URL), anthropic.WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	model, err := p.LanguageModel(t.Context(), "fake-model")
	if err != nil {
		t.Fatal(err)
	}
	res, err := fantasy.NewAgent(model).Generate(t.Context(), fantasy.AgentCall{Prompt: "title this"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Response.Content.Text() != "OK." {
		t.Errorf("side answer %q", res.Response.Content.Text())
	}
}
