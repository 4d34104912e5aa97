package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// relayHost starts one `tabwarden mcp-stdio` process, as a host does with
// the printed stdio configuration, and connects to it speaking the
// sessionless protocol (Claude Code's generation).
func relayHost(t *testing.T, home, name string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binPath, "mcp-stdio")
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_RUNTIME_DIR=" + filepath.Join(home, "run")}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: sessionlessProtocol})
	if err != nil {
		t.Fatalf("%s: connect through the relay: %v", name, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != sessionlessProtocol {
		t.Fatalf("%s negotiated %q, want the sessionless %s", name, v, sessionlessProtocol)
	}
	return cs
}

func structured(t *testing.T, cs *mcp.ClientSession, ctx context.Context, tool string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &m)
	return m
}

// Two host processes with one configuration are two conversations in the
// sessionless protocol (design.md §3): two real relay processes, one token
// (the default one, from the endpoint file), against the real console with
// Chromium. The second's browser_tabs does not list the first's tab, and
// acting on it is wrong_conversation.
func TestTmuxTwoRelaysAreTwoConversations(t *testing.T) {
	c, home, _ := startPageConsole(t, pageConsole{name: fmt.Sprintf("twinst%d", os.Getpid()), cols: 160, rows: 40, agent: "bystander"})
	first := relayHost(t, home, "claude-code")
	second := relayHost(t, home, "claude-code")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	c.cs = first
	opened := c.openApproved(ctx, c.site.URL+"/e2e/act.html")
	tab, _ := opened["tabId"].(string)
	if tab == "" {
		t.Fatalf("the first host opened no tab: %v", opened)
	}
	tabs := structured(t, second, ctx, "browser_tabs", map[string]any{})
	if b, _ := json.Marshal(tabs); strings.Contains(string(b), tab) {
		t.Fatalf("the second host lists the first's tab %s: %s", tab, b)
	}
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"browser_observe", map[string]any{"tabId": tab}},
		{"browser_close", map[string]any{"tabId": tab}},
	} {
		res := structured(t, second, ctx, call.tool, call.args)
		if res["code"] != "wrong_conversation" {
			t.Errorf("the second host's %s on the first's tab: %v, want wrong_conversation", call.tool, res)
		}
	}
	mine := structured(t, first, ctx, "browser_tabs", map[string]any{})
	if b, _ := json.Marshal(mine); !strings.Contains(string(b), tab) {
		t.Fatalf("the first host lost its own tab: %s", b)
	}
	// Two conversations on screen, each its own row.
	c.waitFor("two claude-code conversations", 20*time.Second, func(p, _ string) bool {
		return strings.Count(p, "default · claude-code") >= 2
	})
	if code := c.quit(); code != "0" {
		t.Fatalf("the console exited %s", code)
	}
}
