package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/internal/stacktest/servetest"
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
	home, _, surface := publishedConsole(t)

	cmd := exec.CommandContext(t.Context(), binPath, "mcp-stdio")
	// TMPDIR only keeps the relay off this user's shared fallback
	// directory (<tmp>/tabwarden-UID), where a console of another test or
	// of the person running them may have published first.
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + t.TempDir()}
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

// connect offers its own flags, not mcp-stdio's: an endpoint file (it holds
// the secret a token is minted with), never a URL with --token, which
// connect does not have (the twelfth walk followed the hint to "unknown
// flag: --token").
func TestConnectWithoutConsoleOffersItsOwnFlags(t *testing.T) {
	env := []string{"HOME=" + t.TempDir(), "XDG_RUNTIME_DIR=", "TMPDIR=" + t.TempDir()}
	r := run(t, env, "connect", "codex")
	r.wantCode(t, 1)
	contains(t, "connect", r.stderr, "no tabwarden console is running", "pass --endpoint FILE (a console's endpoint file)")
	lacks(t, "connect", r.stderr, "FILE|URL", "--token")
	r = run(t, env, "connect", "codex", "--endpoint", "http://127.0.0.1:9/mcp")
	r.wantCode(t, 1)
	contains(t, "connect --endpoint URL", r.stderr, "no endpoint file names this URL", "(--endpoint FILE)")
	lacks(t, "connect --endpoint URL", r.stderr, "--token")
}

// `tabwarden connect codex` mints a token called codex on the running
// console and prints Codex's configuration with it; the token works, a second
// connect gets codex-2, and an unknown host is a usage error.
func TestConnectMintsANamedToken(t *testing.T) {
	home, s, _ := publishedConsole(t)
	url := s.URL()

	env := []string{"HOME=" + home, "XDG_RUNTIME_DIR="}
	r := run(t, env, "connect", "codex")
	r.wantCode(t, 0)
	contains(t, "connect", r.stdout, "Codex, over HTTP:", "In ~/.codex/config.toml:", "[mcp_servers.tabwarden]", `url = "`+url+`"`, `Token "codex" was minted`)

	r = run(t, env, "connect", "cursor", "--json")
	r.wantCode(t, 0)
	var out struct {
		Host, Text, TokenName, Token, URL string
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("connect --json printed %q: %v", r.stdout, err)
	}
	if out.Host != "cursor" || out.TokenName != "cursor" || out.URL != url || !strings.Contains(out.Text, "Bearer "+out.Token) {
		t.Fatalf("connect --json: %+v", out)
	}
	if got := s.Tokens(); !slices.Contains(got, "codex") || !slices.Contains(got, "cursor") {
		t.Fatalf("the console's tokens are %v", got)
	}
	r = run(t, env, "connect", "codex", "--json")
	r.wantCode(t, 0)
	if !strings.Contains(r.stdout, `"tokenName": "codex-2"`) {
		t.Fatalf("a second connect codex: %s", r.stdout)
	}
	// The relay form names this tabwarden and hands the relay its token.
	r = run(t, env, "connect", "claude-code")
	r.wantCode(t, 0)
	contains(t, "connect claude-code", r.stdout, "Claude Code, through the stdio relay", "claude mcp add --scope user tabwarden -e TABWARDEN_TOKEN=",
		"-- "+binPath+" mcp-stdio", "In ~/.claude/settings.json", `"mcp__tabwarden"`)
	r = run(t, env, "connect", "codex", "--transport", "pigeon")
	r.wantCode(t, 2)
	contains(t, "stderr", r.stderr, "unknown transport")

	// The minted token is a working agent token.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "cursor", Version: "1.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport(out.Token)}}, nil)
	if err != nil {
		t.Fatalf("connect with the minted token: %v", err)
	}
	defer cs.Close()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("browser_tabs with the minted token: %v %+v", err, res)
	}

	r = run(t, env, "connect", "notepad")
	r.wantCode(t, 2)
	contains(t, "stderr", r.stderr, "unknown host", "claude-code")
}

// An agent token cannot mint tokens: the operator endpoint wants the
// operator secret.
func TestOperatorEndpointRefusesAgentTokens(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	eng := consent.New(consent.Config{})
	t.Cleanup(eng.Close) // after the server, which closes first
	s := servetest.StartConfig(t, context.Background(), mcpserver.Config{Surface: tabsSurface{calls: make(chan string, 1)}, Engine: eng, PublishEndpoint: true})
	ep := mcpserver.Endpoint{URL: s.URL, Operator: s.Secret}
	if _, err := mcpserver.RequestToken(context.Background(), ep, "sneaky"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("minting with an agent token: %v", err)
	}
	if slices.Contains(s.Tokens(), "sneaky") {
		t.Fatal("an agent token minted a token")
	}
}

type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// publishedConsole starts an MCP server that publishes its endpoint file
// under a private HOME and runtime dir, as a console does, with a surface
// that counts the calls reaching it.
func publishedConsole(t *testing.T) (home string, s *mcpserver.Server, surface tabsSurface) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	eng := consent.New(consent.Config{})
	t.Cleanup(eng.Close)
	surface = tabsSurface{calls: make(chan string, 4)}
	s = servetest.StartConfig(t, context.Background(), mcpserver.Config{Surface: surface, Engine: eng, PublishEndpoint: true}).Server
	return home, s, surface
}
