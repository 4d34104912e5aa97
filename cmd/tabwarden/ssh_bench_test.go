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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	gossh "golang.org/x/crypto/ssh"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/internal/stacktest"
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

// waitOK waits until the screen shows want; it gives up after 30 s, or
// when ended is closed (the call answered without its review).
func (s *benchScreen) waitOK(want string, ended <-chan struct{}) bool {
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for !s.has(want) {
		select {
		case <-s.wrote:
		case <-ended:
			return s.has(want)
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

// BenchmarkMCPReviewOnTenSSHScreens: with 10 SSH screens attached (real
// SSH sessions through the wish server, each read through a terminal
// emulator), the time from an agent's MCP call being sent to its review
// being on every screen. The timed call is browser_act on a tab opened,
// approved and read before the loop: the review needs no new tab, so what
// is measured is the MCP server, the engine and the ten screens. Each
// action review is denied, so nothing reaches the page and the
// observation stays valid for the next iteration.
//
// The old figure, browser_open (mostly Chromium creating the tab before
// the review exists), is measured after the loop with the timer stopped,
// one new tab per iteration up to 10 (a conversation opens at most 12
// tabs), and reported as open→screens. Run it with -benchtime 10x.
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

	screens, closeSSH := benchSSHScreens(ctx, b, eng, 10)
	defer closeSSH()
	cs := stacktest.Connect(b, agents.server.URL(), agents.server.DefaultToken().Secret, sessionlessProtocol, "ssh-bench")
	shown := make(chan time.Time, 64)
	defer eng.Listen(func(ev consent.Event) {
		if ev.Kind == consent.EventReviewShown {
			select {
			case shown <- time.Now():
			default:
			}
		}
	})()
	// call sends a call; its result is in *res once ended is closed.
	call := func(tool string, args map[string]any) (res **mcp.CallToolResult, ended chan struct{}) {
		res, ended = new(*mcp.CallToolResult), make(chan struct{})
		go func() {
			defer close(ended)
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				r = &mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{"transport": err.Error()}}
			}
			*res = r
		}()
		return res, ended
	}
	// answer decides the review on screen once the key-ahead guard has
	// passed (setup and clean-up, never timed).
	answer := func(approve bool) {
		for {
			st := eng.Snapshot()
			if st.Focused != nil {
				time.Sleep(2 * delay)
				if err := eng.Decide(st.Focused.ID, approve); err == nil {
					return
				}
			}
			time.Sleep(time.Millisecond)
		}
	}
	// review times one call: from sending it to its review (label) on
	// every screen, and from the engine's review_shown to the same.
	review := func(tool string, args map[string]any, label string) (total, fanout time.Duration, done func() *mcp.CallToolResult) {
		for _, s := range screens {
			s.wait(b, "No review on screen")
		}
		drainShown(shown)
		start := time.Now()
		res, ended := call(tool, args)
		done = func() *mcp.CallToolResult { <-ended; return *res }
		for _, s := range screens {
			if !s.waitOK(label, ended) {
				select {
				case <-ended:
					b.Fatalf("%s answered without its review on every screen: %+v", tool, (*res).StructuredContent)
				default:
				}
				st := eng.Snapshot()
				b.Fatalf("%s: an SSH screen never showed the review; queue %d focused %v selection %+v", tool, len(st.Queue), st.Focused != nil, st.Selection)
			}
		}
		end := time.Now()
		select {
		case t := <-shown:
			fanout = end.Sub(t)
		default:
			b.Fatal("no review_shown event")
		}
		return end.Sub(start), fanout, done
	}

	// Setup: one tab opened, approved and read.
	openArgs := map[string]any{"url": site.URL + "/e2e/act.html"}
	_, _, done := review("browser_open", openArgs, "Allow origin in this tab")
	answer(true)
	res := done()
	if res.IsError {
		b.Fatalf("browser_open failed: %+v", res.StructuredContent)
	}
	tab, _ := res.StructuredContent.(map[string]any)["tabId"].(string)
	_, _, done = review("browser_observe", map[string]any{"tabId": tab}, "Allow reading this origin")
	answer(true)
	res = done()
	sc, _ := res.StructuredContent.(map[string]any)
	obs, _ := sc["observationId"].(string)
	snap, _ := sc["snapshot"].(string)
	var ref string
	for _, line := range strings.Split(snap, "\n") {
		if strings.Contains(line, `button "Ping server"`) {
			ref = strings.Fields(line)[0]
		}
	}
	if res.IsError || obs == "" || ref == "" {
		b.Fatalf("observation without the Ping button: %+v", res.StructuredContent)
	}
	actArgs := map[string]any{"tabId": tab, "observationId": obs, "action": map[string]any{"type": "click", "ref": ref}}

	var lat, fanout []time.Duration
	var cpu time.Duration
	b.ResetTimer()
	for b.Loop() {
		c0 := processCPU()
		total, fan, done := review("browser_act", actArgs, "Allow this action?")
		cpu += processCPU() - c0
		b.StopTimer()
		lat, fanout = append(lat, total), append(fanout, fan)
		answer(false)
		if r := done(); !r.IsError || r.StructuredContent.(map[string]any)["code"] != "user_denied" {
			b.Fatalf("the denied act: %+v", r.StructuredContent)
		}
		b.StartTimer()
	}
	b.StopTimer()
	if n := countQuery(site, "/record", "from=e2e-ping"); n != 0 {
		b.Fatalf("a denied click reached the site %d times", n)
	}

	// The old figure: browser_open, a new tab each time.
	var openLat []time.Duration
	for range min(len(lat), 10) {
		total, _, done := review("browser_open", openArgs, "Allow origin in this tab")
		openLat = append(openLat, total)
		answer(true)
		if r := done(); r.IsError {
			b.Fatalf("browser_open failed: %+v", r.StructuredContent)
		}
	}

	// mcp→screens is the whole way; shown→screens is the part after the
	// engine put the review on screen (the SSH console's share).
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"mcp→screens", lat}, {"shown→screens", fanout}, {"open→screens", openLat}} {
		p50, p95 := percentile(m.d, 50), percentile(m.d, 95)
		b.ReportMetric(ms(p50), m.name+"-p50-ms")
		b.ReportMetric(ms(p95), m.name+"-p95-ms")
		b.Logf("%-14s p50 %7.2f ms  p95 %7.2f ms  (n=%d)", m.name, ms(p50), ms(p95), len(m.d))
	}
	// The console's own CPU time (MCP server, engine, ten screens, and
	// the benchmark's ten terminal emulators) per timed review: on a
	// loaded machine the latency is this much work waiting for a core.
	b.ReportMetric(ms(cpu)/float64(len(lat)), "cpu-ms/review")
	b.Logf("cpu per review %.2f ms (this process; Chromium not counted)", ms(cpu)/float64(len(lat)))
	b.ReportMetric(0, "ns/op")
}

// processCPU is the CPU time (user and system) this process has spent,
// as the kernel counts it: the Go runtime's own estimate counts time the
// OS did not schedule it on a loaded machine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func drainShown(ch chan time.Time) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// benchSSHScreens attaches n SSH operators (a key each in a fresh
// authorized-keys file) to a wish server on the engine, each with a PTY
// read through a terminal emulator. stop closes the sessions and the
// server; call it before the engine closes.
func benchSSHScreens(ctx context.Context, b *testing.B, eng *consent.Engine, n int) (screens []*benchScreen, stop func()) {
	dir := b.TempDir()
	var lines []string
	var signers []gossh.Signer
	for i := range n {
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
	var clients []*gossh.Client
	stop = func() {
		for _, c := range clients {
			_ = c.Close()
		}
		_ = srv.Close()
	}
	fail := func(err error) {
		stop()
		b.Fatal(err)
	}
	for _, sg := range signers {
		c, err := gossh.Dial("tcp", srv.Addr().String(), &gossh.ClientConfig{User: "x", Auth: []gossh.AuthMethod{gossh.PublicKeys(sg)}, HostKeyCallback: gossh.InsecureIgnoreHostKey()})
		if err != nil {
			fail(err)
		}
		clients = append(clients, c)
		sess, err := c.NewSession()
		if err != nil {
			fail(err)
		}
		if err := sess.RequestPty("xterm-256color", 40, 120, gossh.TerminalModes{}); err != nil {
			fail(err)
		}
		out, err := sess.StdoutPipe()
		if err != nil {
			fail(err)
		}
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
			fail(err)
		}
		screens = append(screens, sc)
	}
	return screens, stop
}
