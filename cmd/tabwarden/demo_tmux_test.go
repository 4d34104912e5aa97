package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/internal/screentest"
)

// The headless demo as a newcomer runs it, in a real terminal at 80×24
// and 120×40 (issue 25 §1, §7): the start line points at the page view, not
// at a window that does not exist; once the console signed in for the
// operator the PAUSED banner says so and asks only for r; v shows the page
// like the console's does; and the click review marks its target in it.
func TestTmuxHeadlessDemo(t *testing.T) {
	for _, size := range [][2]int{{120, 40}, {80, 24}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) { tmuxHeadlessDemo(t, size[0], size[1]) })
	}
}

func tmuxHeadlessDemo(t *testing.T, cols, rows int) {
	needTmux(t)
	fixturetest.NeedChromium(t)
	name := fmt.Sprintf("twdemo%d-%d", os.Getpid(), cols)
	home := t.TempDir()
	env := []string{
		"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "XDG_DATA_HOME=" + filepath.Join(home, "data"),
		"XDG_RUNTIME_DIR=" + filepath.Join(home, "run"), "XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"TERM=xterm-256color", "COLORTERM=truecolor",
	}
	// The demo waits for the pipe below: its start line is printed before
	// the screen comes up, and a pipe attached after it would miss it.
	cmdline := fmt.Sprintf("tmux -L %s wait-for piped; env %s %s demo --headless --review-delay 300ms --audit %s; echo TWEXIT=$?; sleep 60",
		name, strings.Join(env, " "), binPath, filepath.Join(home, "audit.jsonl"))
	c := &tmuxConsole{t: t, name: name}
	c.tmux("new-session", "-d", "-s", name, "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows), cmdline)
	t.Cleanup(func() { _ = exec.CommandContext(context.Background(), "tmux", "-L", name, "kill-server").Run() })
	pipe := filepath.Join(home, "pane.out")
	c.tmux("pipe-pane", "-t", name, "-o", "cat >> "+pipe)
	c.tmux("wait-for", "-S", "piped")

	answer := func(title string) {
		t.Helper()
		c.waitFor(strconv.Quote(title), 60*time.Second, func(p, _ string) bool { return strings.Contains(p, title) })
		time.Sleep(400 * time.Millisecond) // the review delay: keys before it are ignored
		c.keys("a")
	}
	answer("Allow website navigation?")
	answer("Allow reading this website?")

	// The take-over: the console signs in for you, and the banner says
	// so and asks for r — never for typing, nor for a Chromium window
	// (issue 25).
	c.waitFor("the PAUSED banner saying the console signed in", 30*time.Second, func(p, _ string) bool {
		return strings.Contains(squashSpace(screentest.RightOfDivider(p)), "PAUSED (demo agent): The console signed in for you")
	})
	plain := c.screen(false)
	banner := squashSpace(screentest.RightOfDivider(plain))
	for _, want := range []string{"there is nothing to type", "Press r to resume"} {
		if !strings.Contains(banner, want) {
			t.Errorf("the PAUSED banner lacks %q:\n%s", want, plain)
		}
	}
	for _, not := range []string{"in the Chromium window", "i to type", "Sign in or finish"} {
		if strings.Contains(banner, not) {
			t.Errorf("the headless demo's banner says %q after the console signed in:\n%s", not, plain)
		}
	}
	t.Logf("the take-over after the console signed in:\n%s", plain)
	// The header fits whole: parts drop, words are never cut (issue 25).
	for i, l := range strings.SplitN(plain, "\n", 3)[:2] {
		if strings.Contains(l, "…") {
			t.Errorf("header line %d is cut at %d columns: %q", i+1, cols, l)
		}
	}
	// The header describes the agents' Chromium, never the policy run's,
	// whichever launched last (issue 25): at 120 columns its pid shows.
	if first := strings.SplitN(plain, "\n", 2)[0]; cols >= 120 && !strings.Contains(first, "Chromium headless (no window) · pid ") {
		t.Errorf("the header does not describe the agents' Chromium by its pid: %q", first)
	}
	c.keys("v")
	c.waitFor("the page view", 20*time.Second, func(p, e string) bool {
		return strings.Contains(p, "Page view") && strings.Count(p, "▀") >= 100
	})
	if s := c.screen(false); strings.Contains(s, "needs the browser") {
		t.Fatalf("v in the demo says it has no browser:\n%s", s)
	}
	c.waitText("Session active") // the tab's title once the console signed in
	// With the page view open, the panel's title and the key help fit
	// whole: parts drop, keys and words are never cut (issue 25).
	c.waitFor("the panel's title with the page's", 20*time.Second, func(p, _ string) bool {
		// The page's title, or the tab's id where it fits too.
		return (strings.Contains(p, "Page view · Session active") || strings.Contains(p, "Page view · tab_")) && strings.Contains(p, "v hide")
	})
	withPage := c.screen(false)
	t.Logf("the page view open:\n%s", withPage)
	lines := strings.Split(strings.TrimRight(withPage, "\n"), "\n")
	for _, l := range lines {
		if i := strings.Index(l, "── Page view"); i >= 0 && strings.Contains(l[i:], "…") {
			t.Errorf("the page panel's title is cut at %d columns: %q", cols, l[i:])
		}
	}
	foot := lines[len(lines)-1]
	if i := strings.LastIndex(foot, "│"); i >= 0 {
		foot = foot[:i]
	}
	if strings.Contains(foot, "…") || !strings.Contains(foot, "? help") || !strings.Contains(foot, "t take") {
		t.Errorf("the key help is cut at %d columns with the page view open: %q", cols, foot)
	}
	c.keys("r")

	answer("Allow website navigation?")
	answer("Allow this site tool call?")
	answer("Share this result with the agent?")
	c.waitText("Allow once")
	c.waitFor("the click target's mark in the page view", 20*time.Second, func(_, e string) bool {
		return markCells(parseCells(e)) >= 2
	})
	t.Logf("the click review with the page view:\n%s", c.screen(false))
	time.Sleep(400 * time.Millisecond) // the guard holds d as well
	c.keys("d")
	c.waitFor("the mark gone", 20*time.Second, func(_, e string) bool { return markCells(parseCells(e)) == 0 })
	c.keys("q")
	c.keys("y")
	c.waitText("TWEXIT=")

	out, err := os.ReadFile(pipe)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); !strings.Contains(s, "two headless Chromiums") || strings.Contains(s, "two Chromium windows") {
		t.Errorf("the start line does not say the Chromiums are headless:\n%.400q", s)
	}
}
