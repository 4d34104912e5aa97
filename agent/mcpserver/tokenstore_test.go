package mcpserver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// A named token outlives the server that minted it: the store keeps only
// its SHA-256, in a 0600 file; a server started later on the same store
// (the console after a restart) accepts it; the default token is not kept.
func TestNamedTokensSurviveARestart(t *testing.T) {
	store := filepath.Join(t.TempDir(), "state", "tokens.json")
	first := startServerWith(t, func(c *Config) { c.TokenStore = store })
	tok, err := first.MintToken("claude-code")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(store)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token store mode %v, want 0600", fi.Mode().Perm())
	}
	if strings.Contains(string(data), tok.Secret) || strings.Contains(string(data), tok.Secret[len(tok.Secret)/2:]) {
		t.Fatal("the token store holds the token itself")
	}
	if strings.Contains(string(data), first.secret[len(first.secret)/2:]) || strings.Contains(string(data), `"default"`) {
		t.Fatalf("the default token is kept:\n%s", data)
	}
	kept, err := ReadTokens(store)
	if err != nil || len(kept) != 1 || kept[0].Name != "claude-code" {
		t.Fatalf("kept tokens %+v, %v", kept, err)
	}
	first.Close()

	second := startServerWith(t, func(c *Config) { c.TokenStore = store })
	cs := stacktest.Connect(t, second.url, tok.Secret, sessionlessVersion, "after-restart")
	if res := stacktest.CallTool(t, cs, "browser_tabs", nil); res.IsError {
		t.Fatalf("the kept token's call failed after the restart: %+v", res)
	}
	if _, err := stacktest.Dial(second.url, first.secret, sessionlessVersion, "old-default"); err == nil {
		t.Fatal("the first server's default token works after the restart")
	}
	if got := second.Tokens(); strings.Join(got, ",") != "claude-code,default" {
		t.Fatalf("tokens after the restart: %v", got)
	}
}

// Revoking a kept token in the file (tabwarden tokens revoke, or another
// console) ends it in a running server without waiting for its next
// request: its conversation ends, and its next call is refused. Revoking in
// the server removes it from the file.
func TestRevokedInTheStoreEndsAtOnce(t *testing.T) {
	store := filepath.Join(t.TempDir(), "tokens.json")
	ts := startServerWith(t, func(c *Config) { c.TokenStore = store })
	tok, err := ts.MintToken("codex")
	if err != nil {
		t.Fatal(err)
	}
	cs := stacktest.Connect(t, ts.url, tok.Secret, statefulVersion, "codex")
	stacktest.CallTool(t, cs, "browser_tabs", nil)
	var conv consent.ConversationID
	stacktest.WaitState(t, ts.engine, "codex's conversation", func(st consent.State) bool {
		for _, c := range st.Conversations {
			if strings.HasPrefix(c.Name, "codex") {
				conv = c.ID
				return true
			}
		}
		return false
	})
	if err := RevokeStoredToken(store, "codex"); err != nil {
		t.Fatal(err)
	}
	stacktest.WaitState(t, ts.engine, "the revoked token's conversation to end", func(st consent.State) bool { return !hasConv(conv)(st) })
	if _, err := stacktest.Dial(ts.url, tok.Secret, sessionlessVersion, "codex-again"); err == nil {
		t.Fatal("a token revoked in the store still connects")
	}

	other, err := ts.MintToken("gemini")
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.RevokeToken("gemini"); err != nil {
		t.Fatal(err)
	}
	if kept, _ := ReadTokens(store); len(kept) != 0 {
		t.Fatalf("still kept after RevokeToken: %+v", kept)
	}
	if _, err := stacktest.Dial(ts.url, other.Secret, sessionlessVersion, "gemini"); err == nil {
		t.Fatal("a revoked token connects")
	}
}

// A token another console of the user kept is accepted here at its first
// request, and one name is never minted twice across consoles.
func TestTokensSharedByTwoServers(t *testing.T) {
	store := filepath.Join(t.TempDir(), "tokens.json")
	a := startServerWith(t, func(c *Config) { c.TokenStore = store })
	b := startServerWith(t, func(c *Config) { c.TokenStore = store })
	tok, err := a.MintToken("opencode")
	if err != nil {
		t.Fatal(err)
	}
	cs := stacktest.Connect(t, b.url, tok.Secret, sessionlessVersion, "opencode")
	if res := stacktest.CallTool(t, cs, "browser_tabs", nil); res.IsError {
		t.Fatalf("b refused a's kept token: %+v", res)
	}
	if _, err := b.MintToken("opencode"); err == nil {
		t.Fatal("b minted a name a keeps")
	}
	if got, _ := b.MintFree("opencode"); got.Name != "opencode-2" {
		t.Fatalf("MintFree on b gave %q", got.Name)
	}
}

// An endpoint file naming another console that still runs is left alone:
// this process publishes beside it and removes only its own file.
func TestEndpointFileOfAnotherConsoleIsKept(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	other := exec.CommandContext(context.Background(), "sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	theirs := []byte(`{"url":"http://127.0.0.1:4444/mcp","token":"tw_theirs","pid":` + itoa(other.Process.Pid) + "}\n")
	for _, dir := range publishDirs() {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, EndpointFile), theirs, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	eng := consent.New(consent.Config{})
	t.Cleanup(eng.Close)
	s, err := New(Config{Surface: newFakeSurface(), Engine: eng, PublishEndpoint: true})
	if err != nil {
		t.Fatal(err)
	}
	url, err := s.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(EndpointDir(), OwnEndpointFile(os.Getpid()))
	ep, err := ReadEndpointFile(own)
	if err != nil || ep.URL != url {
		t.Fatalf("own endpoint file %s: %+v %v", own, ep, err)
	}
	if !waitActivity(eng, own) {
		t.Errorf("the screen does not say where this console's endpoint file is")
	}
	// The console's own line about connecting names the file, since the
	// plain commands reach the other console.
	if got := s.EndpointPath(); got != own {
		t.Errorf("EndpointPath %q, want %q", got, own)
	}
	s.Close()
	for _, dir := range publishDirs() {
		got, err := os.ReadFile(filepath.Join(dir, EndpointFile))
		if err != nil || string(got) != string(theirs) {
			t.Errorf("%s: the other console's endpoint file changed: %q %v", dir, got, err)
		}
		if _, err := os.Stat(filepath.Join(dir, OwnEndpointFile(os.Getpid()))); err == nil {
			t.Errorf("%s: this console's own file outlived it", dir)
		}
	}
	if ep, _, err := FindEndpoint(); err != nil || ep.PID != other.Process.Pid {
		t.Fatalf("after this console quit, the running one is not found: %+v %v", ep, err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func waitActivity(eng *consent.Engine, sub string) bool {
	for _, a := range eng.Snapshot().Activity {
		if strings.Contains(a.Text, sub) {
			return true
		}
	}
	return false
}
