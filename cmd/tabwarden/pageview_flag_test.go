package main

import (
	"context"
	"fmt"
	"image/color"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi/sixel"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
)

var sixelPicture = regexp.MustCompile("\x1bP0;1q([^\x1b]*)\x1b\\\\")

// --page-view sixel on the real console: under tmux, where auto draws
// half-blocks, the console writes the page as sixel without asking the
// terminal anything (the bytes it writes to the pane, read with
// pipe-pane), the picture decodes to the fixture page with its block in
// rgb(0,160,255), and the pane holds no half-block of it.
func TestTmuxPageViewFlagForcesSixel(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed; CI installs it (scripts/deps.sh)")
		}
		t.Skip("tmux is not installed (make deps installs it)")
	}
	fixturetest.NeedChromium(t)
	site := fixturetest.Start(t)
	home := t.TempDir()
	run := filepath.Join(home, "run")
	_ = os.MkdirAll(run, 0o700)
	t.Setenv("XDG_RUNTIME_DIR", run)
	t.Setenv("HOME", home)
	name := fmt.Sprintf("twsixel%d", os.Getpid())
	rawPath := filepath.Join(t.TempDir(), "pane.raw") // outside the console's HOME
	env := []string{
		"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "XDG_DATA_HOME=" + filepath.Join(home, "data"),
		"XDG_RUNTIME_DIR=" + run, "XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "TERM=xterm-256color", "COLORTERM=truecolor",
	}
	cmdline := fmt.Sprintf("env %s %s --headless --page-view sixel --review-delay 300ms --audit %s --profile %s; echo TWEXIT=$?; sleep 60",
		strings.Join(env, " "), binPath, filepath.Join(home, "audit.jsonl"), filepath.Join(home, "profile"))
	c := &tmuxConsole{t: t, name: name, site: site}
	c.tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40", cmdline)
	t.Cleanup(func() { _ = exec.CommandContext(context.Background(), "tmux", "-L", name, "kill-server").Run() })
	c.tmux("pipe-pane", "-t", name, "-o", "cat >> "+rawPath)

	var ep mcpserver.Endpoint
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		if ep, err = mcpserver.ReadEndpoint(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the console published no endpoint: %v\n%s", err, c.screen(false))
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.cs = jDial(t, ep.URL, ep.Token, "sixel-agent")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opened := c.call(ctx, "browser_open", map[string]any{"url": site.URL + "/pageview.html"})
	c.waitText("Allow origin in this tab")
	time.Sleep(500 * time.Millisecond)
	c.keys("a")
	pageResult(t, opened)

	c.keys("v")
	c.waitText("Page view")
	var payload string
	deadline = time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(rawPath)
		if m := sixelPicture.FindAllSubmatch(b, -1); len(m) > 0 {
			payload = string(m[len(m)-1][1])
			if strings.Contains(payload, "#") && blueInSixel(t, payload) > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the console wrote no sixel picture of the page (%d bytes to the pane)\n%s", len(b), c.screen(false))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := blueInSixel(t, payload); n < 500 {
		t.Errorf("the sixel picture has %d pixels of the block's blue", n)
	}
	raw, _ := os.ReadFile(rawPath)
	if strings.Contains(string(raw), "\x1b[c") || strings.Contains(string(raw), "\x1b_Gi=31") {
		t.Error("the console asked the terminal although --page-view was given")
	}
	if n, _, _ := blockCells(parseCells(c.screen(true)), 0, 160, 255); n != 0 {
		t.Errorf("%d half-block cells of the block with --page-view sixel", n)
	}

	c.keys("q")
	time.Sleep(300 * time.Millisecond)
	c.keys("y")
	c.waitText("TWEXIT=0")
	checkNoFrameData(t, home)
}

// blueInSixel decodes a sixel payload and counts its pixels near the
// fixture block's rgb(0,160,255).
func blueInSixel(t *testing.T, payload string) int {
	t.Helper()
	img, err := (&sixel.Decoder{}).Decode(strings.NewReader(payload))
	if err != nil {
		return 0
	}
	n := 0
	b := img.Bounds()
	want := color.RGBA{0, 160, 255, 255}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bb, _ := img.At(x, y).RGBA()
			d := func(a uint32, w uint8) bool { v := int(a>>8) - int(w); return v > -12 && v < 12 }
			if d(r, want.R) && d(g, want.G) && d(bb, want.B) {
				n++
			}
		}
	}
	return n
}
