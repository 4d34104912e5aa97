package agent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
)

// stampArgs and stampTool are a whole tool, written as docs/dev.md says a
// new tool is: this value (its own file in the product) and one line in a
// profile's list (stampProfile below).
type stampArgs struct {
	Text string `json:"text" jsonschema:"the text to stamp"`
}

var stampTool = agent.NewTool(agent.ToolSpec{
	Name:        "test_stamp",
	Title:       "Stamp a text",
	Description: "Answers the text it was given, stamped.",
	ReadOnly:    true,
}, func(_ *agent.Dispatcher, _ context.Context, conv consent.ConversationID, a stampArgs) (agent.Result, consent.TabID) {
	return agent.Result{Object: map[string]any{"ok": true, "stamped": "[" + a.Text + "]", "conversation": string(conv)}}, ""
})

// stampProfile registers stampTool beside the default tools.
var stampProfile = &agent.Profile{
	Name:         "stamp",
	Tools:        append(slices.Clone(agent.Default.Tools), stampTool),
	Instructions: agent.Default.Instructions,
}

// TestAToolIsOneValue: a tool added as one value and one registration line
// is published by the MCP server with the schema of its argument type,
// routed by the dispatch, strict about its arguments and audited, with no
// other file touched.
func TestAToolIsOneValue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng := consent.New(consent.Config{ReviewDelay: reviewDelay})
	calls := &audittest.Memory{}
	d := agent.NewDispatcher(agent.DispatcherConfig{Engine: eng, Browser: goneBrowser{}, Audit: calls, Tools: stampProfile.Tools})
	t.Cleanup(d.Close)
	ms, err := mcpserver.New(mcpserver.Config{Surface: d, Engine: eng, Profile: stampProfile, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	url, err := ms.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ms.Close)
	client := mcp.NewClient(&mcp.Implementation{Name: "stamp", Version: "1.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: bearer{ms.DefaultToken().Secret}}, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var published *mcp.Tool
	for _, tool := range list.Tools {
		if tool.Name == stampTool.Name {
			published = tool
		}
	}
	if len(list.Tools) != len(stampProfile.Tools) || published == nil {
		t.Fatalf("published %d tools without %s, want the profile's %d", len(list.Tools), stampTool.Name, len(stampProfile.Tools))
	}
	schema, _ := json.Marshal(published.InputSchema)
	var shape struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &shape); err != nil || !slices.Equal(shape.Required, []string{"text"}) || len(shape.Properties) != 1 {
		t.Fatalf("schema of %s = %s, want the one required property of stampArgs", stampTool.Name, schema)
	}
	if published.Annotations == nil || !published.Annotations.ReadOnlyHint {
		t.Errorf("annotations = %+v, want readOnlyHint from the spec", published.Annotations)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: stampTool.Name, Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &got); err != nil || res.IsError || got["stamped"] != "[hi]" || got["conversation"] == "" {
		t.Fatalf("call = %s (error %v)", b, res.IsError)
	}
	bad, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: stampTool.Name, Arguments: map[string]any{"text": "hi", "extra": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !bad.IsError {
		t.Fatalf("an unknown argument reached the handler: %+v", bad.StructuredContent)
	}
	var stamped []string
	for _, r := range calls.Records() {
		if r.Kind == audit.KindToolCall && r.Tool == stampTool.Name {
			stamped = append(stamped, r.Decision+" "+r.Code)
		}
	}
	if !slices.Equal(stamped, []string{"ok ", "failed invalid_action"}) {
		t.Fatalf("audit of %s = %q, want one record per call", stampTool.Name, stamped)
	}
}

// bearer presents the console's agent token on every request.
type bearer struct{ secret string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.secret)
	return http.DefaultTransport.RoundTrip(r)
}
