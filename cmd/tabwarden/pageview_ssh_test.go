package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/internal/stacktest"
	"github.com/tabwarden/tabwarden/tui/sshconsole"
	"github.com/tabwarden/tabwarden/tui/sshconsole/sshtest"
)

// pressKey types k on the operator's screen and gives the console a
// moment to draw its answer.
func pressKey(s *sshtest.Screen, k string) {
	s.Send(k)
	time.Sleep(80 * time.Millisecond)
}

// Two operators over SSH: ana's v shows the page on her screen in its
// colours while bob's screen, on the same engine, shows no page view and
// starts no stream; bob's i outside a take-over refuses.
func TestSSHPageViewPerScreen(t *testing.T) {
	fixturetest.NeedChromium(t)
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.DiscardHandler))
	t.Cleanup(func() { slog.SetDefault(prev) })
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eng := consent.New(consent.Config{ReviewDelay: 250 * time.Millisecond})
	defer eng.Close()
	site := fixturetest.Start(t)
	agents, err := startAgents(ctx, &options{headless: true, mcpListen: "127.0.0.1:0", profile: t.TempDir() + "/profile"}, eng, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer agents.close()

	dir := t.TempDir()
	anaKey, bobKey := sshtest.NewKey(t, "ana"), sshtest.NewKey(t, "bob")
	keys := filepath.Join(dir, "operators")
	sshtest.WriteAuthorizedKeys(t, keys, anaKey, bobKey)
	srv, err := sshconsole.Start(ctx, eng, sshconsole.Config{Addr: "127.0.0.1:0", AuthorizedKeys: keys, HostKey: filepath.Join(dir, "host_key"), Page: agents.browser})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	colour := map[string]string{"COLORTERM": "truecolor"}
	ana := sshtest.Attach(t, srv.Addr().String(), anaKey, sshtest.Options{User: "ana", Env: colour})
	bob := sshtest.Attach(t, srv.Addr().String(), bobKey, sshtest.Options{User: "bob", Env: colour})

	cs := stacktest.Connect(t, agents.server.URL(), agents.server.DefaultToken().Secret, sessionlessProtocol, "ssh-page-agent")
	c := &tmuxConsole{t: t, cs: cs}
	opened := c.call(ctx, "browser_open", map[string]any{"url": site.URL + "/pageview.html"})
	ana.WaitUntil("the navigation review", func(s, _ string) bool { return strings.Contains(s, "Allow origin in this tab") })
	time.Sleep(600 * time.Millisecond)
	pressKey(ana, "a")
	pageResult(t, opened)

	pressKey(ana, "v")
	ana.WaitUntil("the block in half-blocks", func(_, st string) bool {
		n, _, _ := blockCells(parseCells(st), 0, 160, 255)
		return n >= 20
	})
	pressKey(bob, "i")
	bob.WaitUntil("bob's refusal", func(s, _ string) bool { return strings.Contains(s, "only during a take-over") })
	if strings.Contains(bob.Text(), "v hide · i type") {
		t.Errorf("bob's screen shows ana's page view:\n%s", bob.Text())
	}
	if n, _, _ := blockCells(parseCells(bob.Styled()), 0, 160, 255); n != 0 {
		t.Errorf("bob's screen draws %d cells of the page", n)
	}
	pressKey(ana, "v")
	ana.WaitUntil("the view closed", func(s, _ string) bool { return !strings.Contains(s, "v hide · i type") })
}
