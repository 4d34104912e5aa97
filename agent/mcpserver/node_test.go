package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// needTool finds a program the Node client test needs. Locally a missing
// one skips the test; in CI (CI=true) it fails it, so the check can never
// silently stop running there.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI for the Node MCP client test: %v", name, err)
		}
		t.Skipf("%s not found; the Node MCP client test needs it", name)
	}
	return p
}

// TestNodeClient runs scripts/node-mcp-client (the official TypeScript SDK,
// Streamable HTTP, bearer header) against a live server.
func TestNodeClient(t *testing.T) {
	node, dir := nodeClientDir(t)

	ts := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", ts.url, ts.secret)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, out)
	}
	var got struct {
		SessionID string `json:"sessionId"`
		Tools     []struct {
			Name         string `json:"name"`
			ReadOnlyHint bool   `json:"readOnlyHint"`
			HasSchema    bool   `json:"hasSchema"`
		} `json:"tools"`
		BrowserTabs struct {
			IsError           bool           `json:"isError"`
			Text              string         `json:"text"`
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"browserTabs"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node client printed %q: %v", out, err)
	}

	var names, want []string
	for _, tool := range got.Tools {
		names = append(names, tool.Name)
		if !tool.HasSchema {
			t.Errorf("%s: the Node SDK saw no object input schema", tool.Name)
		}
		spec := specNamed(tool.Name)
		if tool.ReadOnlyHint != spec.ReadOnly {
			t.Errorf("%s: readOnlyHint %v, want %v", tool.Name, tool.ReadOnlyHint, spec.ReadOnly)
		}
	}
	for _, s := range agent.Default.Tools {
		want = append(want, s.Name)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("Node client listed %v, want %v", names, want)
	}
	if got.BrowserTabs.IsError || got.BrowserTabs.Text != cannedResult("browser_tabs", nil).JSON() || got.BrowserTabs.StructuredContent["ok"] != true {
		t.Fatalf("browser_tabs through the Node SDK: %+v", got.BrowserTabs)
	}
	// The Node SDK negotiates the stateful protocol: its own session, its
	// own conversation, ended when the client terminated the session.
	if got.SessionID == "" {
		t.Fatalf("the Node client got no MCP session")
	}
	calls := ts.surface.Calls()
	if len(calls) != 1 || calls[0].Tool != "browser_tabs" {
		t.Fatalf("surface calls %+v", calls)
	}
	stacktest.WaitState(t, ts.engine, "the Node client's conversation ended with its session", func(st consent.State) bool {
		return !hasConv(calls[0].Conv)(st)
	})
}

func specNamed(name string) *agent.Tool {
	for _, s := range agent.Default.Tools {
		if s.Name == name {
			return s
		}
	}
	return nil
}
