package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	gossh "golang.org/x/crypto/ssh"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
	"github.com/tabwarden/tabwarden/tui/sshconsole"
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

	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := gossh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keys := filepath.Join(dir, "operators")
	line := strings.TrimSpace(string(gossh.MarshalAuthorizedKey(signer.PublicKey()))) + " ana"
	if err := os.WriteFile(keys, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := sshconsole.Start(ctx, eng, sshconsole.Config{Addr: "127.0.0.1:0", AuthorizedKeys: keys, HostKey: filepath.Join(dir, "host_key")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	client, err := gossh.Dial("tcp", srv.Addr().String(), &gossh.ClientConfig{
		User: "ana", Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)},
		HostKeyCallback: gossh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.RequestPty("xterm-256color", 40, 120, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	stdin, _ := sess.StdinPipe()
	stdout, _ := sess.StdoutPipe()
	emu := vt.NewEmulator(120, 40)
	go func() { _, _ = io.Copy(io.Discard, emu) }()
	var mu sync.Mutex
	go func() {
		buf := make([]byte, 32*1024)
		for {
			n, err := stdout.Read(buf)
			mu.Lock()
			_, _ = emu.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	waitScreen := func(want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			mu.Lock()
			s := emu.String()
			mu.Unlock()
			if strings.Contains(s, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the SSH screen never showed %q:\n%s", want, s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	cs := jDial(t, agents.server.URL(), agents.server.DefaultToken().Secret, "ssh-agent")
	type callResult struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan callResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_open", Arguments: map[string]any{"url": site.URL + "/e2e/act.html"}})
		done <- callResult{res, err}
	}()
	waitScreen("Allow origin in this tab")
	rev := eng.Snapshot().Focused
	if rev == nil {
		t.Fatal("the review is on the SSH screen but not focused in the engine")
	}
	time.Sleep(time.Until(rev.ShownAt.Add(3 * delay)))
	if n := site.Total(); n != 0 {
		t.Fatalf("the site saw %d requests before the key press", n)
	}
	if _, err := io.WriteString(stdin, "a"); err != nil {
		t.Fatal(err)
	}
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
			found = rec.Decision == "approved" && rec.Operator == "ana" && rec.KeyFingerprint == gossh.FingerprintSHA256(signer.PublicKey())
		}
	}
	if !found {
		t.Fatalf("no approval by ana's key for %s in the audit: %+v", rev.ID, mem.Records())
	}
	waitScreen("approved by ana")
}
