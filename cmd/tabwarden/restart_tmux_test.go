package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// quit quits the console in its pane (q, and y when it asks) and waits for
// its exit code.
func (c *tmuxConsole) quit() string {
	c.t.Helper()
	c.keys("q")
	if strings.Contains(c.screen(false), "y quit") || strings.Contains(c.screen(false), "(y/") {
		c.keys("y")
	}
	var code string
	c.waitFor("the console's exit", 30*time.Second, func(p, _ string) bool {
		if strings.Contains(p, "live") && !strings.Contains(p, "TWEXIT=") {
			c.keys("y")
		}
		i := strings.Index(p, "TWEXIT=")
		if i < 0 {
			return false
		}
		code = strings.Fields(p[i+len("TWEXIT="):])[0]
		return true
	})
	return code
}

// cli runs the binary as the console's user (HOME and XDG dirs of home).
func cli(t *testing.T, home string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binPath, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"), "XDG_RUNTIME_DIR="+filepath.Join(home, "run"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func tabsWith(ctx context.Context, url, token string) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: "1.0"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: stacktest.Bearer{Secret: token}}, MaxRetries: -1}
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: sessionlessProtocol})
	if err != nil {
		return err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{}})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("browser_tabs failed: %v", res.StructuredContent)
	}
	return nil
}

// A host configured once keeps working after the console restarts
// (design.md §3): the real console in tmux; `tabwarden connect` mints a
// token; a second console for the same user is refused with who holds the
// port; a third on an address of its own leaves the first's mcp.json
// alone, and after it quits `connect` still finds the first; the first
// quits and starts again on the same address, where the token from before
// works without new configuration, until `tabwarden tokens revoke`.
func TestTmuxConfigSurvivesRestart(t *testing.T) {
	home := t.TempDir()
	name := fmt.Sprintf("twrestart%d", os.Getpid())
	first, _, ep := startPageConsole(t, pageConsole{name: name + "a", cols: 160, rows: 40, agent: "first-agent", home: home})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	out, err := cli(t, home, "connect", "claude-code", "--json")
	if err != nil {
		t.Fatalf("connect: %v %s", err, out)
	}
	var minted struct{ Token, URL string }
	if err := json.Unmarshal([]byte(out), &minted); err != nil || minted.URL != ep.URL {
		t.Fatalf("connect: %v %s (console at %s)", err, out, ep.URL)
	}
	if err := tabsWith(ctx, minted.URL, minted.Token); err != nil {
		t.Fatal(err)
	}

	// A second console for the same user: the stable address is taken.
	second, _, _ := startPageConsole(t, pageConsole{name: name + "b", cols: 160, rows: 40, home: home, noDial: true})
	second.waitText("TWEXIT=1")
	// The pane wraps the message wherever column 160 falls, mid-word too:
	// compare with every space and line break taken out.
	scr := strings.Join(strings.Fields(second.screen(false)), "")
	for _, want := range []string{"is taken by the tabwarden console pid " + fmt.Sprint(ep.PID), "--mcp-listen 127.0.0.1:0 --profile DIR"} {
		if !strings.Contains(scr, strings.Join(strings.Fields(want), "")) {
			t.Errorf("the refused console does not say %q:\n%s", want, scr)
		}
	}

	// A third on an address of its own publishes beside the first.
	third, _, _ := startPageConsole(t, pageConsole{name: name + "c", cols: 160, rows: 40, home: home, noDial: true,
		flags: "--mcp-listen 127.0.0.1:0 --profile " + filepath.Join(home, "profile3")})
	third.waitText("its own endpoint file")
	if got, err := mcpserver.ReadEndpoint(); err != nil || got.PID != ep.PID {
		t.Fatalf("the third console took mcp.json: %+v %v", got, err)
	}
	if code := third.quit(); code != "0" {
		t.Fatalf("the third console exited %s", code)
	}
	if out, err := cli(t, home, "connect", "gemini-cli", "--json"); err != nil || !strings.Contains(out, ep.URL) {
		t.Fatalf("after the third console quit, connect does not find the first: %v %s", err, out)
	}

	// Restart the first: same address, the token from before still works.
	if code := first.quit(); code != "0" {
		t.Fatalf("the first console exited %s", code)
	}
	if err := tabsWith(ctx, minted.URL, minted.Token); err == nil {
		t.Fatal("a call succeeded with no console running")
	}
	restarted, _, ep2 := startPageConsole(t, pageConsole{name: name + "d", cols: 160, rows: 40, agent: "after-restart", home: home})
	if ep2.URL != ep.URL {
		t.Fatalf("the endpoint moved across the restart: %s, then %s", ep.URL, ep2.URL)
	}
	if err := tabsWith(ctx, minted.URL, minted.Token); err != nil {
		t.Fatalf("the configuration from before the restart: %v", err)
	}
	restarted.waitText("claude-code")

	out, err = cli(t, home, "tokens", "list")
	if err != nil || !strings.Contains(out, "claude-code") || !strings.Contains(out, "gemini-cli") || strings.Contains(out, minted.Token[5:]) {
		t.Fatalf("tokens list: %v\n%s", err, out)
	}
	if out, err := cli(t, home, "tokens", "revoke", "claude-code"); err != nil {
		t.Fatalf("tokens revoke: %v %s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for tabsWith(ctx, minted.URL, minted.Token) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the revoked token still works")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out, err := cli(t, home, "tokens", "revoke", "claude-code"); err == nil || !strings.Contains(out, "no kept agent token") {
		t.Fatalf("revoking twice: %v %s", err, out)
	}
	// Quit, so its Chromium is gone before the profile is removed.
	if code := restarted.quit(); code != "0" {
		t.Fatalf("the restarted console exited %s", code)
	}
}
