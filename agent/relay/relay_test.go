package relay

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/internal/stacktest/servetest"
)

// recorder is a Surface that answers browser_tabs and records callers.
type recorder struct {
	mu    sync.Mutex
	convs []consent.ConversationID
}

func (r *recorder) Call(_ context.Context, conv consent.ConversationID, tool string, _ json.RawMessage) agent.Result {
	r.mu.Lock()
	r.convs = append(r.convs, conv)
	r.mu.Unlock()
	return agent.Result{Object: map[string]any{"ok": true, "tabs": []any{}, "paused": false, "tool": tool}}
}

func (r *recorder) seen() []consent.ConversationID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]consent.ConversationID(nil), r.convs...)
}

// console starts an in-process console that publishes its endpoint file in
// a private runtime dir.
func console(t *testing.T) (*mcpserver.Server, *consent.Engine, *recorder) {
	t.Helper()
	// Every place the search path looks is the test's own: a console the
	// person running the tests has open (its file in /tmp/tabwarden-UID)
	// must not answer for this one.
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("TMPDIR", t.TempDir())
	eng := consent.New(consent.Config{})
	t.Cleanup(eng.Close)
	rec := &recorder{}
	s := servetest.StartConfig(t, context.Background(), mcpserver.Config{Surface: rec, Engine: eng, PublishEndpoint: true})
	return s.Server, eng, rec
}

// hostOverStdio runs Run on pipes and connects an SDK client to its stdio,
// as a stdio-only MCP host would.
func hostOverStdio(t *testing.T, version string) (*mcp.ClientSession, <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()   // host → relay stdin
	outR, outW := io.Pipe() // relay stdout → host
	runErr := make(chan error, 1)
	go func() {
		err := Run(context.Background(), inR, outW)
		outW.Close()
		runErr <- err
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-host", Version: "1.0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect through the relay: %v", err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated %q through the relay, want %q", got, version)
	}
	return cs, runErr
}

func TestRelayCarriesBothProtocols(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			_, eng, rec := console(t)
			cs, runErr := hostOverStdio(t, version)

			tools, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tools.Tools) != len(agent.Default.Tools) {
				t.Fatalf("listed %d tools through the relay, want %d", len(tools.Tools), len(agent.Default.Tools))
			}
			for range 2 {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "browser_tabs"})
				if err != nil {
					t.Fatal(err)
				}
				if res.IsError || res.StructuredContent.(map[string]any)["tool"] != "browser_tabs" {
					t.Fatalf("browser_tabs through the relay: %+v", res)
				}
			}
			seen := rec.seen()
			if len(seen) != 2 || seen[0] != seen[1] || seen[0] == "" {
				t.Fatalf("conversations seen %v: want one conversation for the relay", seen)
			}
			if !hasConv(eng, seen[0]) {
				t.Fatalf("conversation %s not registered", seen[0])
			}

			if err := cs.Close(); err != nil { // closes the relay's stdin
				t.Fatal(err)
			}
			if err := <-runErr; err != nil {
				t.Fatalf("Run after stdin ended: %v", err)
			}
			if version == "2025-11-25" {
				// The relay's session ends with it, and so does its conversation.
				waitGone(t, eng, seen[0])
			}
		})
	}
}

func TestRelayWithoutConsole(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("TMPDIR", t.TempDir())
	err := Run(context.Background(), strings.NewReader(""), io.Discard)
	if !errors.Is(err, ErrNoConsole) {
		t.Fatalf("Run with no console: %v", err)
	}
	// The error names every place it looked.
	for _, path := range mcpserver.EndpointSearchPath() {
		if !strings.Contains(err.Error(), path+" (none)") {
			t.Errorf("error %q does not say it looked in %s", err, path)
		}
	}
	if !strings.Contains(err.Error(), "start `tabwarden` first, or pass --endpoint FILE|URL") {
		t.Errorf("error %q does not say what to do", err)
	}
}

// A host that strips the environment (Codex, the TypeScript SDK's stdio
// client) leaves the relay HOME and PATH only: it finds the console through
// the copy of the endpoint file under HOME.
func TestRelayFindsConsoleWithOnlyHome(t *testing.T) {
	_, _, rec := console(t)
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", t.TempDir())
	cs, runErr := hostOverStdio(t, "2026-07-28")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("browser_tabs through the relay: %v %+v", err, res)
	}
	if len(rec.seen()) != 1 {
		t.Fatalf("the console saw %d calls, want 1", len(rec.seen()))
	}
	cs.Close()
	if err := <-runErr; err != nil {
		t.Fatalf("relay: %v", err)
	}
}

// Two live consoles on the search path (another HOME's console, one
// under /tmp): a relay given a token connects to the console that accepts
// it, whichever file comes first; with a token neither takes, the first
// found (whose refusal RunEndpoint reports).
func TestRelayPicksTheConsoleThatTakesItsToken(t *testing.T) {
	a, _, _ := console(t)
	aDir := os.Getenv("XDG_RUNTIME_DIR")
	b, _, _ := console(t)
	t.Setenv("XDG_RUNTIME_DIR", aDir) // a's file first, b's under b's HOME after
	paths := mcpserver.EndpointSearchPath()
	for _, c := range []struct {
		token, wantURL string
	}{
		{b.DefaultToken().Secret, b.URL()},
		{a.DefaultToken().Secret, a.URL()},
		{"tw_neither", a.URL()},
	} {
		ep, from, err := Locate("", c.token)
		if err != nil || ep.URL != c.wantURL || ep.Token != c.token {
			t.Errorf("Locate with a token: %s from %s (%v), want %s; search path %v", ep.URL, from, err, c.wantURL, paths)
		}
	}
}

func TestLocateByURLAndFile(t *testing.T) {
	s, _, _ := console(t)
	url := s.URL()
	ep, from, err := Locate(url, "")
	if err != nil || ep.URL != url || ep.Token != s.DefaultToken().Secret || from != mcpserver.EndpointPath() {
		t.Fatalf("Locate(URL) = %+v from %q, %v", ep, from, err)
	}
	if ep, _, err := Locate(url, "tw_given"); err != nil || ep.Token != "tw_given" {
		t.Fatalf("Locate(URL, token) = %+v, %v", ep, err)
	}
	if _, _, err := Locate("http://127.0.0.1:9/mcp", ""); err == nil || !strings.Contains(err.Error(), "pass --token") {
		t.Fatalf("Locate(unknown URL) without a token: %v", err)
	}
	if ep, from, err := Locate(mcpserver.EndpointPath(), ""); err != nil || ep.URL != url || from != mcpserver.EndpointPath() {
		t.Fatalf("Locate(FILE) = %+v from %q, %v", ep, from, err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	missing := dir + "/mcp.json"
	if _, _, err := Locate(missing, ""); !errors.Is(err, ErrNoConsole) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Locate(missing FILE): %v", err)
	}
	// A missing file in a directory others can read is still "no such
	// file", not a complaint about the directory (the walk: /nonexistent).
	if _, _, err := Locate("/nonexistent-tabwarden-endpoint", ""); !errors.Is(err, ErrNoConsole) || strings.Contains(err.Error(), "readable by other users") {
		t.Fatalf("Locate(/nonexistent…): %v", err)
	}
}

func TestRelayWithStaleEndpoint(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	// A port nothing listens on: take one and give it back.
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	if _, err := mcpserver.WriteEndpoint(url, "tw_stale"); err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), strings.NewReader(""), io.Discard)
	if !errors.Is(err, ErrNoConsole) || !strings.Contains(err.Error(), "start `tabwarden` first") {
		t.Fatalf("Run with a stale endpoint: %v", err)
	}
}

func TestRelayWithRevokedToken(t *testing.T) {
	s, _, _ := console(t)
	if err := s.RevokeToken(mcpserver.DefaultTokenName); err != nil {
		t.Fatal(err)
	}
	err := Run(context.Background(), strings.NewReader(""), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "rejected the token") {
		t.Fatalf("Run with a revoked token: %v", err)
	}
}

func hasConv(eng *consent.Engine, id consent.ConversationID) bool {
	for _, c := range eng.Snapshot().Conversations {
		if c.ID == id {
			return true
		}
	}
	return false
}

// waitGone waits on the engine's change signal until id is removed.
func waitGone(t *testing.T, eng *consent.Engine, id consent.ConversationID) {
	t.Helper()
	ch, stop := eng.Changes()
	defer stop()
	timeout := time.After(15 * time.Second)
	for hasConv(eng, id) {
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("conversation %s still registered after the relay's session ended", id)
		}
	}
}

// A token revoked while the relay runs: the host's next call gets an error
// response (it never waits forever) and the relay exits saying why.
func TestRelayTokenRevokedWhileRunning(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			s, _, rec := console(t)
			cs, runErr := hostOverStdio(t, version)
			defer cs.Close()
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "browser_tabs"}); err != nil {
				t.Fatal(err)
			}
			if err := s.RevokeToken(mcpserver.DefaultTokenName); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "browser_tabs"}); err == nil {
				t.Fatal("a call with a revoked token succeeded through the relay")
			}
			err := <-runErr
			if err == nil || !strings.Contains(err.Error(), "rejected the relay's token") {
				t.Fatalf("Run after revocation: %v", err)
			}
			if n := len(rec.seen()); n != 1 {
				t.Fatalf("surface saw %d calls, want only the one before revocation", n)
			}
		})
	}
}

// A host that writes its calls and closes stdin at once (a script piping
// into `tabwarden mcp-stdio`) still gets every answer before the relay
// exits.
func TestRelayAnswersCallsWrittenBeforeStdinEnds(t *testing.T) {
	console(t)
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"browser_tabs","arguments":{}}}
`)
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Run(ctx, in, &out); err != nil {
		t.Fatalf("Run: %v", err)
	}
	ids := map[float64]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		// Each call gets its answer; which answer is the console's
		// business (a call that overtakes notifications/initialized, as
		// calls written at once may, is refused during initialization).
		var m struct {
			ID     float64         `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err == nil && (m.Result != nil || m.Error != nil) {
			ids[m.ID] = true
		}
	}
	if !ids[1] || !ids[2] || !ids[3] {
		t.Fatalf("answers for %v after stdin ended, want 1, 2 and 3:\n%s", ids, out.String())
	}
}
