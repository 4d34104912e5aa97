package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
)

// npmClients installs scripts/npm-clients (pinned MCP Inspector and
// mcp-remote) once and returns the path of its node_modules/.bin.
func npmClients(t *testing.T) string {
	t.Helper()
	needTool(t, "node")
	dir, err := filepath.Abs(filepath.Join("..", "..", "scripts", "npm-clients"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, "mcp-remote")); err != nil {
		npm := needTool(t, "npm")
		// --ignore-scripts: the clients run from their published builds; no
		// install script of theirs is needed or wanted.
		install := exec.CommandContext(t.Context(), npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
		install.Dir = dir
		if out, err := install.CombinedOutput(); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
			}
			t.Skipf("npm ci in %s failed (offline?): %v\n%s", dir, err, out)
		}
	}
	return bin
}

// inspector runs the MCP Inspector's CLI against the server and returns its
// stdout and stderr; a non-zero exit fails the test.
func inspector(t *testing.T, bin string, ts *testServer, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	argv := append([]string{"--cli", ts.url, "--header", "Authorization: Bearer " + ts.secret}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "mcp-inspector"), argv...)
	cmd.Env = append(os.Environ(), "MCP_CATALOG_PATH="+filepath.Join(t.TempDir(), "catalog.json"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcp-inspector %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// The MCP Inspector's strict portability check finds nothing to report in
// the tool list (it exits 6 on errors and prints every warning on stderr),
// and its CLI calls a tool.
func TestInspectorCLI(t *testing.T) {
	bin := npmClients(t)
	ts := startServer(t)

	out, errOut := inspector(t, bin, ts, "--method", "tools/list", "--strict")
	if strings.TrimSpace(errOut) != "" {
		t.Fatalf("the Inspector's strict check reported:\n%s", errOut)
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("tools/list printed %q: %v", out, err)
	}
	var names, want []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	for _, s := range agent.Default.Tools {
		want = append(want, s.Name)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("the Inspector listed %v, want %v", names, want)
	}

	out, _ = inspector(t, bin, ts, "--method", "tools/call", "--tool-name", "browser_tabs")
	var call struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(out), &call); err != nil {
		t.Fatalf("tools/call printed %q: %v", out, err)
	}
	if call.IsError || call.StructuredContent["ok"] != true {
		t.Fatalf("browser_tabs through the Inspector: %s", out)
	}
	if calls := ts.surface.Calls(); len(calls) != 1 || calls[0].Tool != "browser_tabs" {
		t.Fatalf("surface calls %+v", calls)
	}
}

// mcp-remote bridges a stdio host to the console's HTTP endpoint with the
// bearer header; browser_tabs works through it.
func TestMCPRemoteBridge(t *testing.T) {
	bin := npmClients(t)
	ts := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The header travels in an environment variable, as mcp-remote's own
	// instructions advise, so no argument carries a space or the secret.
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "mcp-remote"), ts.url, "--allow-http", "--transport", "http-only",
		"--header", "Authorization:${TABWARDEN_AUTH}")
	cmd.Env = append(os.Environ(), "TABWARDEN_AUTH=Bearer "+ts.secret, "MCP_REMOTE_CONFIG_DIR="+t.TempDir())
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-host", Version: "1.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect through mcp-remote: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("browser_tabs through mcp-remote: %v", err)
	}
	if res.IsError {
		t.Fatalf("browser_tabs through mcp-remote: %+v", res)
	}
	if calls := ts.surface.Calls(); len(calls) != 1 || calls[0].Tool != "browser_tabs" {
		t.Fatalf("surface calls %+v", calls)
	}
}
