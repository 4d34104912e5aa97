package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/consent"
)

// tabsSurface answers browser_tabs the way an empty console does and counts
// the calls that reach it.
type tabsSurface struct{ calls chan string }

func (s tabsSurface) Call(_ context.Context, _ consent.ConversationID, tool string, _ json.RawMessage) agent.Result {
	s.calls <- tool
	return agent.Result{Object: map[string]any{"ok": true, "tabs": []any{}, "paused": false}}
}

// The host strips the relay's environment to HOME and PATH (as Codex and the
// TypeScript SDK's stdio client do); the console was started with its full
// environment. The relay still finds it.
func TestMCPStdioWithOnlyHomeAndPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	eng := consent.New(consent.Config{})
	defer eng.Close()
	surface := tabsSurface{calls: make(chan string, 4)}
	s, err := mcpserver.New(mcpserver.Config{Surface: surface, Engine: eng, PublishEndpoint: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	cmd := exec.Command(binPath, "mcp-stdio")
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "stripped-host", Version: "1.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect through `env -i HOME PATH tabwarden mcp-stdio`: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("browser_tabs through the relay: %v %+v", err, res)
	}
	select {
	case tool := <-surface.calls:
		if tool != "browser_tabs" {
			t.Fatalf("the console saw %q, want browser_tabs", tool)
		}
	default:
		t.Fatal("the call did not reach the console")
	}
}

// With no console anywhere, the relay says where it looked and exits 1.
func TestMCPStdioWithoutConsoleSaysWhereItLooked(t *testing.T) {
	home := t.TempDir()
	r := run(t, []string{"HOME=" + home, "XDG_RUNTIME_DIR=", "TMPDIR=" + t.TempDir()}, "mcp-stdio")
	r.wantCode(t, 1)
	contains(t, "stderr", r.stderr, "no tabwarden console is running", home+"/.local/state/tabwarden/run/mcp.json (none)", "--endpoint FILE|URL")
}
