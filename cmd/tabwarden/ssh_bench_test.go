package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	gossh "golang.org/x/crypto/ssh"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/tui/sshconsole"
)

// benchScreen is one SSH operator's terminal, read through an emulator.
type benchScreen struct {
	mu    sync.Mutex
	emu   *vt.Emulator
	wrote chan struct{}
}

func (s *benchScreen) has(want string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Contains(s.emu.String(), want)
}

func (s *benchScreen) waitOK(want string) bool {
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for !s.has(want) {
		select {
		case <-s.wrote:
		case <-deadline.C:
			return false
		}
	}
	return true
}

func (s *benchScreen) wait(b *testing.B, want string) {
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for !s.has(want) {
		select {
		case <-s.wrote:
		case <-deadline.C:
			b.Fatalf("an SSH screen never showed %q", want)
		}
	}
}

// BenchmarkMCPReviewOnTenSSHScreens: with 10 SSH screens attached, the
// time from an agent's browser_open over MCP (a real Chromium) to its
// navigation review being on every screen, as each terminal shows it.
// Each iteration opens a new tab and a conversation's tabs are limited
// (12), so run it with -benchtime 10x.
func BenchmarkMCPReviewOnTenSSHScreens(b *testing.B) {
	if _, err := browser.FindChromium(""); err != nil {
		b.Skipf("no Chromium: %v", err)
	}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.DiscardHandler))
	defer slog.SetDefault(prev)
	b.Setenv("XDG_RUNTIME_DIR", b.TempDir())
	b.Setenv("HOME", b.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	const delay = 5 * time.Millisecond
	eng := consent.New(consent.Config{ReviewDelay: delay})
	defer eng.Close()
	site := fixturetest.Start(b)
	agents, err := startAgents(ctx, &options{headless: true, mcpListen: "127.0.0.1:0", profile: b.TempDir() + "/profile"}, eng, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer agents.close()

	dir := b.TempDir()
	var lines []string
	var signers []gossh.Signer
	for i := range 10 {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		s, _ := gossh.NewSignerFromKey(priv)
		signers = append(signers, s)
		lines = append(lines, strings.TrimSpace(string(gossh.MarshalAuthorizedKey(s.PublicKey())))+fmt.Sprintf(" op%d", i))
	}
	keys := filepath.Join(dir, "operators")
	if err := os.WriteFile(keys, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	srv, err := sshconsole.Start(ctx, eng, sshconsole.Config{Addr: "127.0.0.1:0", AuthorizedKeys: keys, HostKey: filepath.Join(dir, "host_key")})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	var screens []*benchScreen
	for _, sg := range signers {
		c, err := gossh.Dial("tcp", srv.Addr().String(), &gossh.ClientConfig{User: "x", Auth: []gossh.AuthMethod{gossh.PublicKeys(sg)}, HostKeyCallback: gossh.InsecureIgnoreHostKey()})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		sess, _ := c.NewSession()
		if err := sess.RequestPty("xterm-256color", 40, 120, gossh.TerminalModes{}); err != nil {
			b.Fatal(err)
		}
		out, _ := sess.StdoutPipe()
		sc := &benchScreen{emu: vt.NewEmulator(120, 40), wrote: make(chan struct{}, 1)}
		go func() { _, _ = io.Copy(io.Discard, sc.emu) }()
		go func() {
			buf := make([]byte, 32*1024)
			for {
				n, err := out.Read(buf)
				sc.mu.Lock()
				_, _ = sc.emu.Write(buf[:n])
				sc.mu.Unlock()
				select {
				case sc.wrote <- struct{}{}:
				default:
				}
				if err != nil {
					return
				}
			}
		}()
		if err := sess.Shell(); err != nil {
			b.Fatal(err)
		}
		screens = append(screens, sc)
	}
	cs := jDialB(b, agents.server.URL(), agents.server.DefaultToken().Secret)
	const label = "Allow origin in this tab"
	shown := make(chan time.Time, 64)
	defer eng.Listen(func(ev consent.Event) {
		if ev.Kind == consent.EventReviewShown {
			select {
			case shown <- time.Now():
			default:
			}
		}
	})()
	var lat, fanout []time.Duration
	b.ResetTimer()
	for b.Loop() {
		if len(lat) >= 12 {
			b.Fatal("a conversation opens at most 12 tabs: use -benchtime 10x")
		}
		b.StopTimer()
		for _, s := range screens {
			s.wait(b, "No review on screen")
		}
		b.StartTimer()
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_open", Arguments: map[string]any{"url": site.URL + "/e2e/act.html"}})
			if err == nil && res.IsError {
				err = fmt.Errorf("browser_open failed: %+v", res.StructuredContent)
			}
			done <- err
		}()
		for _, s := range screens {
			if !s.waitOK(label) {
				st := eng.Snapshot()
				b.Fatalf("iteration %d: an SSH screen never showed the review; queue %d focused %v selection %+v", len(lat), len(st.Queue), st.Focused != nil, st.Selection)
			}
		}
		end := time.Now()
		lat = append(lat, end.Sub(start))
		b.StopTimer()
		select {
		case t := <-shown:
			fanout = append(fanout, end.Sub(t))
		default:
			b.Fatal("no review_shown event")
		}
		for {
			st := eng.Snapshot()
			if st.Focused != nil {
				time.Sleep(2 * delay)
				if err := eng.Decide(st.Focused.ID, true); err == nil {
					break
				}
			}
			time.Sleep(time.Millisecond)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	slices.Sort(lat)
	slices.Sort(fanout)
	q := func(d []time.Duration, p float64) float64 {
		return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000
	}
	// mcp→screens is the whole way; shown→screens is the part after the
	// engine put the review on screen (the SSH console's share).
	b.ReportMetric(q(lat, 0.50), "mcp→screens-p50-ms")
	b.ReportMetric(q(lat, 0.95), "mcp→screens-p95-ms")
	b.ReportMetric(q(fanout, 0.50), "shown→screens-p50-ms")
	b.ReportMetric(q(fanout, 0.95), "shown→screens-p95-ms")
	b.ReportMetric(0, "ns/op")
}

func jDialB(b *testing.B, url, secret string) *mcp.ClientSession {
	client := mcp.NewClient(&mcp.Implementation{Name: "ssh-bench", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: jClient(secret)},
		&mcp.ClientSessionOptions{ProtocolVersion: sessionlessProtocol})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}
