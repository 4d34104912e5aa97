package main

import (
	"context"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi/sixel"
)

var sixelPicture = regexp.MustCompile("\x1bP0;1q([^\x1b]*)\x1b\\\\")

// --page-view sixel on the real console: under tmux, where auto draws
// half-blocks, the console writes the page as sixel without asking the
// terminal anything (the bytes it writes to the pane, read with
// pipe-pane), the picture decodes to the fixture page with its block in
// rgb(0,160,255), and the pane holds no half-block of it.
func TestTmuxPageViewFlagForcesSixel(t *testing.T) {
	rawPath := filepath.Join(t.TempDir(), "pane.raw") // outside the console's HOME
	c, home, _ := startPageConsole(t, pageConsole{
		name: fmt.Sprintf("twsixel%d", os.Getpid()), cols: 120, rows: 40,
		flags: "--page-view sixel", agent: "sixel-agent", pipe: rawPath,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c.openApproved(ctx, c.site.URL+"/pageview.html")

	c.keys("v")
	c.waitText("Page view")
	var payload string
	deadline := time.Now().Add(30 * time.Second)
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
