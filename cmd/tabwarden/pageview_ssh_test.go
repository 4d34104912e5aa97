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
	gossh "golang.org/x/crypto/ssh"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/tui/sshconsole"
)

// sshScreen is one operator's SSH session in a terminal emulator.
type sshScreen struct {
	t     *testing.T
	stdin io.Writer
	mu    sync.Mutex
	emu   *vt.Emulator
}

func dialScreen(t *testing.T, addr string, signer gossh.Signer, user string) *sshScreen {
	t.Helper()
	client, err := gossh.Dial("tcp", addr, &gossh.ClientConfig{
		User: user, Auth: []gossh.AuthMethod{gossh.PublicKeys(signer)},
		HostKeyCallback: gossh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	_ = sess.Setenv("COLORTERM", "truecolor")
	if err := sess.RequestPty("xterm-256color", 40, 120, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	stdin, _ := sess.StdinPipe()
	stdout, _ := sess.StdoutPipe()
	s := &sshScreen{t: t, stdin: stdin, emu: vt.NewEmulator(120, 40)}
	go func() { _, _ = io.Copy(io.Discard, s.emu) }()
	go func() {
		buf := make([]byte, 32*1024)
		for {
			n, err := stdout.Read(buf)
			s.mu.Lock()
			_, _ = s.emu.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *sshScreen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.String()
}

func (s *sshScreen) styled() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.Render()
}

func (s *sshScreen) key(k string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, k); err != nil {
		s.t.Fatal(err)
	}
	time.Sleep(80 * time.Millisecond)
}

func (s *sshScreen) waitFor(what string, ok func(text, styled string) bool) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if ok(s.text(), s.styled()) {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the SSH screen never showed %s:\n%s", what, s.text())
		}
		time.Sleep(50 * time.Millisecond)
	}
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
	var lines []string
	signers := map[string]gossh.Signer{}
	for _, name := range []string{"ana", "bob"} {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		s, err := gossh.NewSignerFromKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		signers[name] = s
		lines = append(lines, strings.TrimSpace(string(gossh.MarshalAuthorizedKey(s.PublicKey())))+" "+name)
	}
	keys := filepath.Join(dir, "operators")
	if err := os.WriteFile(keys, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := sshconsole.Start(ctx, eng, sshconsole.Config{Addr: "127.0.0.1:0", AuthorizedKeys: keys, HostKey: filepath.Join(dir, "host_key"), Page: agents.browser})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ana := dialScreen(t, srv.Addr().String(), signers["ana"], "ana")
	bob := dialScreen(t, srv.Addr().String(), signers["bob"], "bob")

	cs := jDial(t, agents.server.URL(), agents.server.DefaultToken().Secret, "ssh-page-agent")
	c := &tmuxConsole{t: t, cs: cs}
	opened := c.call(ctx, "browser_open", map[string]any{"url": site.URL + "/pageview.html"})
	ana.waitFor("the navigation review", func(s, _ string) bool { return strings.Contains(s, "Allow origin in this tab") })
	time.Sleep(600 * time.Millisecond)
	ana.key("a")
	pageResult(t, opened)

	ana.key("v")
	ana.waitFor("the block in half-blocks", func(_, st string) bool {
		n, _, _ := blockCells(parseCells(st), 0, 160, 255)
		return n >= 20
	})
	bob.key("i")
	bob.waitFor("bob's refusal", func(s, _ string) bool { return strings.Contains(s, "only during a take-over") })
	if strings.Contains(bob.text(), "v hide · i type") {
		t.Errorf("bob's screen shows ana's page view:\n%s", bob.text())
	}
	if n, _, _ := blockCells(parseCells(bob.styled()), 0, 160, 255); n != 0 {
		t.Errorf("bob's screen draws %d cells of the page", n)
	}
	ana.key("v")
	ana.waitFor("the view closed", func(s, _ string) bool { return !strings.Contains(s, "v hide · i type") })
}
