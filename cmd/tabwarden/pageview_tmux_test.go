package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/internal/proctest"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// rgb is a true-colour cell colour; set is false for the default.
type rgb struct {
	r, g, b int
	set     bool
}

func (c rgb) near(r, g, b int) bool {
	d := func(a, b int) bool { return a-b < 28 && b-a < 28 }
	return c.set && d(c.r, r) && d(c.g, g) && d(c.b, b)
}

type cell struct {
	ch     rune
	fg, bg rgb
}

// parseCells reads `tmux capture-pane -e -p` output into cells, following
// the SGR colour sequences (true colour only; any other colour reads as
// unset).
func parseCells(s string) [][]cell {
	var out [][]cell
	for _, line := range strings.Split(s, "\n") {
		var row []cell
		var fg, bg rgb
		rs := []rune(line)
		for i := 0; i < len(rs); i++ {
			if rs[i] == 0x1b && i+1 < len(rs) && rs[i+1] == '[' {
				j := i + 2
				for j < len(rs) && (rs[j] < 0x40 || rs[j] > 0x7e) {
					j++
				}
				if j < len(rs) && rs[j] == 'm' {
					fg, bg = applySGR(string(rs[i+2:j]), fg, bg)
				}
				i = j
				continue
			}
			row = append(row, cell{ch: rs[i], fg: fg, bg: bg})
		}
		out = append(out, row)
	}
	return out
}

func applySGR(params string, fg, bg rgb) (rgb, rgb) {
	ps := strings.Split(params, ";")
	num := func(i int) int {
		if i >= len(ps) {
			return 0
		}
		n, _ := strconv.Atoi(ps[i])
		return n
	}
	for i := 0; i < len(ps); i++ {
		switch n := num(i); {
		case ps[i] == "" || n == 0:
			fg, bg = rgb{}, rgb{}
		case n == 39:
			fg = rgb{}
		case n == 49:
			bg = rgb{}
		case (n == 38 || n == 48) && num(i+1) == 2:
			c := rgb{num(i + 2), num(i + 3), num(i + 4), true}
			if n == 38 {
				fg = c
			} else {
				bg = c
			}
			i += 4
		case (n == 38 || n == 48) && num(i+1) == 5:
			if n == 38 {
				fg = rgb{}
			} else {
				bg = rgb{}
			}
			i += 2
		case n >= 30 && n <= 37 || n >= 90 && n <= 97:
			fg = rgb{}
		case n >= 40 && n <= 47 || n >= 100 && n <= 107:
			bg = rgb{}
		}
	}
	return fg, bg
}

// blockCells are the half-block cells whose both halves are near r,g,b.
func blockCells(cells [][]cell, r, g, b int) (n, x, y int) {
	sx, sy := 0, 0
	for yy, row := range cells {
		for xx, c := range row {
			if c.ch == '▀' && c.fg.near(r, g, b) && c.bg.near(r, g, b) {
				n++
				sx, sy = sx+xx, sy+yy
			}
		}
	}
	if n == 0 {
		return 0, -1, -1
	}
	return n, sx / n, sy / n
}

// markCells counts half-block cells with a half in the mark's colour.
func markCells(cells [][]cell) int {
	n := 0
	for _, row := range cells {
		for _, c := range row {
			if c.ch == '▀' && (c.fg.near(255, 0, 200) || c.bg.near(255, 0, 200)) {
				n++
			}
		}
	}
	return n
}

type tmuxConsole struct {
	t    testing.TB
	name string
	site *fixture.Server
	cs   *mcp.ClientSession
}

// tmux runs on the console's own server (-L name): a server another test
// is shutting down, with its last session killed, refuses new sessions.
func (c *tmuxConsole) tmux(args ...string) {
	c.t.Helper()
	if out, err := exec.CommandContext(c.t.Context(), "tmux", append([]string{"-L", c.name}, args...)...).CombinedOutput(); err != nil {
		c.t.Fatalf("tmux %v: %v %s", args, err, out)
	}
}

func (c *tmuxConsole) keys(ks ...string) {
	c.t.Helper()
	for _, k := range ks {
		c.tmux("send-keys", "-t", c.name, k)
		time.Sleep(60 * time.Millisecond)
	}
}

// typeText sends s literally, one key at a time.
func (c *tmuxConsole) typeText(s string) {
	c.t.Helper()
	for _, r := range s {
		c.tmux("send-keys", "-t", c.name, "-l", string(r))
		time.Sleep(60 * time.Millisecond)
	}
}

// click presses and releases the left button on cell x, y (0-based),
// as an SGR mouse report the terminal would send.
func (c *tmuxConsole) click(x, y int) {
	c.t.Helper()
	c.tmux("send-keys", "-t", c.name, "-l", fmt.Sprintf("\x1b[<0;%d;%dM", x+1, y+1))
	time.Sleep(50 * time.Millisecond)
	c.tmux("send-keys", "-t", c.name, "-l", fmt.Sprintf("\x1b[<0;%d;%dm", x+1, y+1))
	time.Sleep(60 * time.Millisecond)
}

func (c *tmuxConsole) screen(escapes bool) string {
	args := []string{"capture-pane", "-p", "-t", c.name}
	if escapes {
		args = append(args, "-e")
	}
	out, _ := exec.CommandContext(c.t.Context(), "tmux", append([]string{"-L", c.name}, args...)...).Output()
	return string(out)
}

func (c *tmuxConsole) waitFor(what string, limit time.Duration, ok func(plain, esc string) bool) string {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		plain, esc := c.screen(false), c.screen(true)
		if ok(plain, esc) {
			return esc
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the screen never showed %s:\n%s", what, plain)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

func (c *tmuxConsole) waitText(want string) {
	c.t.Helper()
	c.waitFor(strconv.Quote(want), 20*time.Second, func(p, _ string) bool { return strings.Contains(p, want) })
}

func (c *tmuxConsole) call(ctx context.Context, tool string, args map[string]any) <-chan *mcp.CallToolResult {
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{"err": err.Error()}}
		}
		done <- res
	}()
	return done
}

func pageResult(t testing.TB, ch <-chan *mcp.CallToolResult) map[string]any {
	t.Helper()
	select {
	case res := <-ch:
		// The page view never reaches an agent: no picture in any result.
		b, _ := json.Marshal(res)
		for _, sig := range []string{"/9j/", "iVBORw0KGgo"} {
			if strings.Contains(string(b), sig) {
				t.Errorf("an MCP result holds picture data (%q)", sig)
			}
		}
		m, _ := res.StructuredContent.(map[string]any)
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return within 30s")
		return nil
	}
}

// pageConsole is how startPageConsole runs the real console in tmux.
type pageConsole struct {
	name       string // the tmux server's and session's
	cols, rows int
	flags      string // added to the console's command line
	agent      string // the MCP client's name
	pipe       string // if set, every byte the console writes to the pane is appended here
	home       string // the console's HOME; empty: a new temporary one
	noDial     bool   // connect no MCP client (the console may be meant to fail)
}

// needTmux skips (fails, in CI) without tmux.
func needTmux(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal("tmux is not installed; CI installs it (scripts/deps.sh)")
		}
		tb.Skip("tmux is not installed (make deps installs it)")
	}
}

// startPageConsole runs the real console, headless, with a HOME of its own
// in a tmux terminal of its own, serving the fixture site, and connects an
// MCP client to it. The console's audit log is HOME/audit.jsonl; when it
// exits the pane says TWEXIT=<code>.
func startPageConsole(tb testing.TB, o pageConsole) (c *tmuxConsole, home string, ep mcpserver.Endpoint) {
	tb.Helper()
	needTmux(tb)
	fixturetest.NeedChromium(tb)
	site := fixturetest.Start(tb)
	home = o.home
	if home == "" {
		home = tb.TempDir()
	}
	run := filepath.Join(home, "run")
	_ = os.MkdirAll(run, 0o700)
	tb.Setenv("XDG_RUNTIME_DIR", run)
	tb.Setenv("HOME", home)
	env := []string{
		"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "XDG_DATA_HOME=" + filepath.Join(home, "data"),
		"XDG_RUNTIME_DIR=" + run, "XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "TERM=xterm-256color", "COLORTERM=truecolor",
	}
	// o.flags come last, so they may override the defaults here.
	cmdline := fmt.Sprintf("env %s %s --headless --review-delay 300ms --audit %s --profile %s %s; echo TWEXIT=$?; sleep 60",
		strings.Join(env, " "), binPath, filepath.Join(home, "audit.jsonl"), filepath.Join(home, "profile"), o.flags)
	if o.pipe != "" {
		// The console waits for the pipe: a pipe attached after its first
		// bytes would miss them (and a secret among them).
		cmdline = fmt.Sprintf("tmux -L %s wait-for piped; %s", o.name, cmdline)
	}
	c = &tmuxConsole{t: tb, name: o.name, site: site}
	c.tmux("new-session", "-d", "-s", o.name, "-x", strconv.Itoa(o.cols), "-y", strconv.Itoa(o.rows), cmdline)
	profile := filepath.Join(home, "profile")
	tb.Cleanup(func() {
		_ = exec.CommandContext(context.Background(), "tmux", "-L", o.name, "kill-server").Run()
		// The console ends its Chromium on the hang-up, which takes a
		// moment; the profile (in a TempDir) is removed only after.
		waitNoProcessNaming(profile, 30*time.Second)
	})
	if o.pipe != "" {
		c.tmux("pipe-pane", "-t", o.name, "-o", "cat >> "+o.pipe)
		c.tmux("wait-for", "-S", "piped")
	}
	if o.noDial {
		return c, home, ep
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var err error
		if ep, err = mcpserver.ReadEndpoint(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the console published no endpoint: %v\n%s", err, c.screen(false))
		}
	}
	c.cs = stacktest.Connect(tb, ep.URL, ep.Token, sessionlessProtocol, o.agent)
	return c, home, ep
}

// openApproved opens url over MCP and approves its origin with `a`, as
// the operator does, and returns browser_open's result.
func (c *tmuxConsole) openApproved(ctx context.Context, url string) map[string]any {
	c.t.Helper()
	opened := c.call(ctx, "browser_open", map[string]any{"url": url})
	c.waitText("Allow origin in this tab")
	time.Sleep(500 * time.Millisecond) // the review delay: keys before it are ignored
	c.keys("a")
	return pageResult(c.t, opened)
}

// The page view end to end, as an operator on a headless console uses it
// in a real terminal (tmux, 120×40): `v` shows the fixture page in
// half-blocks with its solid block in its colour; an action review marks
// its target in the view and the page's MutationObserver sees no change;
// outside a take-over, and during one without `i`, typed credentials and
// a click on Sign in reach nothing; with `t` `i` they sign in exactly once.
func TestTmuxPageView(t *testing.T) {
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) { tmuxPageView(t, size[0], size[1]) })
	}
}

func tmuxPageView(t *testing.T, cols, rows int) {
	c, home, _ := startPageConsole(t, pageConsole{name: fmt.Sprintf("twpage%d-%d", os.Getpid(), cols), cols: cols, rows: rows, agent: "page-agent"})
	site := c.site
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	r := c.openApproved(ctx, site.URL+"/pageview.html")
	tab, _ := r["tabId"].(string)
	if tab == "" {
		t.Fatalf("browser_open: %+v", r)
	}

	// v: the block, rgb(0,160,255), in the top left of the picture; the
	// button, rgb(230,40,40), below it.
	c.keys("v")
	esc := c.waitFor("the page's block in half-blocks", 20*time.Second, func(_, e string) bool {
		n, _, _ := blockCells(parseCells(e), 0, 160, 255)
		return n >= 20
	})
	cells := parseCells(esc)
	nBlock, bx, by := blockCells(cells, 0, 160, 255)
	nButton, kx, ky := blockCells(cells, 230, 40, 40)
	t.Logf("block: %d cells around %d,%d; button: %d cells around %d,%d\n%s", nBlock, bx, by, nButton, kx, ky, c.screen(false))
	if nButton < 20 || ky <= by {
		t.Fatalf("the button is not drawn below the block:\n%s", c.screen(false))
	}

	// Outside a take-over: i refuses, the keys and a click reach nothing.
	c.keys("i")
	c.waitText("only during a take-over")
	c.typeText("bob")
	c.keys("Tab")
	c.typeText("helm")
	c.click(kx, ky)
	time.Sleep(time.Second)
	if n := countReq(site, "POST", "/signin"); n != 0 {
		t.Fatalf("%d sign-ins without a take-over", n)
	}

	// An action review: its target is marked in the view, the page sees
	// no DOM change.
	obs := c.call(ctx, "browser_observe", map[string]any{"tabId": tab})
	c.waitText("Allow reading this origin")
	time.Sleep(500 * time.Millisecond)
	c.keys("a")
	r = pageResult(t, obs)
	snap, _ := r["snapshot"].(string)
	m := regexp.MustCompile(`(?m)^(e\d+) button "Sign in"`).FindStringSubmatch(snap)
	if m == nil {
		t.Fatalf("no Sign in button in the observation: %+v", r)
	}
	before := countQuery(site, "/record", "mutation=")
	act := c.call(ctx, "browser_act", map[string]any{"tabId": tab, "observationId": r["observationId"], "action": map[string]any{"type": "click", "ref": m[1]}})
	c.waitText("Allow once")
	c.waitFor("the target's mark in the view", 20*time.Second, func(_, e string) bool { return markCells(parseCells(e)) >= 10 })
	time.Sleep(500 * time.Millisecond)
	t.Logf("action review:\n%s", c.screen(false))
	if n := countQuery(site, "/record", "mutation=") - before; n != 0 {
		t.Errorf("the page saw %d DOM mutation reports while its target was marked", n)
	}
	c.keys("d")
	pageResult(t, act)
	c.waitFor("the mark gone", 20*time.Second, func(_, e string) bool { return markCells(parseCells(e)) == 0 })
	if n := countReq(site, "POST", "/signin"); n != 0 {
		t.Fatalf("the denied click signed in: %d", n)
	}

	// Take over, no i: still nothing.
	c.keys("t")
	c.waitText("PAUSED")
	c.typeText("bob")
	c.keys("Tab")
	c.typeText("helm")
	c.click(kx, ky)
	time.Sleep(time.Second)
	if n := countReq(site, "POST", "/signin"); n != 0 {
		t.Fatalf("%d sign-ins from keys outside input mode", n)
	}

	// t i: type the credentials, click Sign in on the view.
	c.keys("i")
	c.waitText("TYPING INTO THE PAGE")
	t.Logf("input mode:\n%s", c.screen(false))
	c.typeText("bob")
	c.keys("Tab")
	c.typeText("helm")
	c.click(kx, ky)
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if _, err := site.WaitPath(wctx, "/session"); err != nil {
		t.Fatalf("no sign-in after t i: %v\n%s", err, c.screen(false))
	}
	time.Sleep(500 * time.Millisecond)
	if n := countReq(site, "POST", "/signin"); n != 1 {
		t.Fatalf("%d sign-ins, want exactly 1", n)
	}

	// Leave input mode, quit.
	c.keys("Escape")
	c.waitText("stopped typing")
	c.keys("q")
	time.Sleep(300 * time.Millisecond)
	c.keys("y")
	c.waitText("TWEXIT=0")

	// Nothing of a frame was written: the audit log and the console's files
	// hold no picture.
	checkNoFrameData(t, home)
}

// checkNoFrameData fails if any file under dir holds a JPEG or PNG, or
// the base64 of one.
func checkNoFrameData(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || strings.Contains(p, string(filepath.Separator)+"profile"+string(filepath.Separator)) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		s := string(b)
		for _, sig := range []string{"\xff\xd8\xff", "\x89PNG", "/9j/", "iVBORw0KGgo"} {
			if strings.Contains(s, sig) {
				t.Errorf("%s holds picture data (%q)", p, sig)
			}
		}
		return nil
	})
}

// waitNoProcessNaming waits, at most limit, until no process's command line
// contains marker.
func waitNoProcessNaming(marker string, limit time.Duration) {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		found := false
		for _, p := range proctest.All() {
			if strings.Contains(strings.Join(p.Args, "\x00"), marker) {
				found = true
				break
			}
		}
		if !found {
			return
		}
	}
}
