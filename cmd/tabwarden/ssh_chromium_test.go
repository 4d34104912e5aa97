package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
	"github.com/tabwarden/tabwarden/internal/stacktest"
	"github.com/tabwarden/tabwarden/tui/sshconsole"
	"github.com/tabwarden/tabwarden/tui/sshconsole/sshtest"
)

// A navigation an agent asks for over MCP, in a real Chromium, is
// approved by an operator's a over SSH: nothing reaches the site before
// the key press, the page loads after it, and the audit names the
// operator's key.
func TestSSHOperatorApprovesRealNavigation(t *testing.T) {
	fixturetest.NeedChromium(t)
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.DiscardHandler))
	t.Cleanup(func() { slog.SetDefault(prev) })
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const delay = 300 * time.Millisecond
	mem := &audittest.Memory{}
	eng := consent.New(consent.Config{ReviewDelay: delay, Audit: mem})
	defer eng.Close()
	site := fixturetest.Start(t)
	agents, err := startAgents(ctx, &options{headless: true, mcpListen: "127.0.0.1:0", profile: t.TempDir() + "/profile"}, eng, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer agents.close()

	ana := sshtest.NewKey(t, "ana")
	dir := t.TempDir()
	keys := filepath.Join(dir, "operators")
	sshtest.WriteAuthorizedKeys(t, keys, ana)
	srv, err := sshconsole.Start(ctx, eng, sshconsole.Config{Addr: "127.0.0.1:0", AuthorizedKeys: keys, HostKey: filepath.Join(dir, "host_key")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	scr := sshtest.Attach(t, srv.Addr().String(), ana, sshtest.Options{User: "ana"})

	cs := stacktest.Connect(t, agents.server.URL(), agents.server.DefaultToken().Secret, sessionlessProtocol, "ssh-agent")
	type callResult struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan callResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_open", Arguments: map[string]any{"url": site.URL + "/e2e/act.html"}})
		done <- callResult{res, err}
	}()
	scr.WaitFor("Allow origin in this tab")
	rev := eng.Snapshot().Focused
	if rev == nil {
		t.Fatal("the review is on the SSH screen but not focused in the engine")
	}
	// The key-ahead guard counts from when the review reached this
	// screen (no later than the WaitFor above), not from the engine's
	// ShownAt: a screen drawn late under load would refuse the key.
	time.Sleep(3 * delay)
	if n := site.Total(); n != 0 {
		t.Fatalf("the site saw %d requests before the key press", n)
	}
	scr.Send("a")
	var r callResult
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("browser_open did not return after the approval")
	}
	if r.err != nil || r.res.IsError {
		t.Fatalf("browser_open: %v %+v", r.err, r.res)
	}
	if n := site.Count("/e2e/act.html"); n < 1 {
		t.Fatalf("the approved page was not loaded (site saw %d requests)", site.Total())
	}
	var found bool
	for _, rec := range mem.Records() {
		if rec.Kind == audit.KindDecision && rec.Review == rev.ID {
			found = rec.Decision == "approved" && rec.Operator == "ana" && rec.KeyFingerprint == ana.Fingerprint()
		}
	}
	if !found {
		t.Fatalf("no approval by ana's key for %s in the audit: %+v", rev.ID, mem.Records())
	}
	scr.WaitFor("approved by ana")
}
