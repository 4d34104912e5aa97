package tui

import (
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tabwarden/tabwarden/internal/displaytest"
)

// TestMain runs the xterm test's screen when the test binary is started
// inside xterm as its helper (TABWARDEN_XTERM_SCREEN set); otherwise the
// tests.
func TestMain(m *testing.M) {
	if out := os.Getenv("TABWARDEN_XTERM_SCREEN"); out != "" {
		os.Exit(xtermScreen(out))
	}
	os.Exit(m.Run())
}

// xtermScreen is the console's screen on the terminal it runs in, with the
// fixture page (a blue block top-left): auto detection, then v; v again
// once the file out+".hide" exists. It writes the protocol it detected to
// out (the test's, never the picture).
func xtermScreen(out string) int {
	m := New(newFake(baseState()), Options{Version: "v0.1.0", Now: fixedClock, Page: newFakePage()})
	defer m.Close()
	written := false
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var p *tea.Program
	p = tea.NewProgram(m, tea.WithContext(ctx), tea.WithFilter(func(tm tea.Model, msg tea.Msg) tea.Msg {
		if mm, ok := tm.(Model); ok && !written && mm.term.started && !mm.term.detecting && mm.term.proto != "" {
			written = true
			_ = os.WriteFile(out, []byte(mm.term.proto), 0o600)
			go p.Send(press("v"))
		}
		return msg
	}))
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(out + ".hide"); err == nil {
				p.Send(press("v"))
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	if _, err := p.Run(); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// A real terminal: xterm as a VT340 (sixel) under Xvfb. The screen asks it,
// picks sixel from its DA1 reply, and the page's blue block shows up in
// xterm's pixels where the panel is (the right part of the window, below
// the panel's title), a solid rectangle, not cells of half-blocks. Hiding
// the view takes it off the screen.
func TestXtermShowsThePageInSixel(t *testing.T) {
	displaytest.Need(t, "xterm", "Xvfb")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	// Xvfb keeps its screen in dir/Xvfb_screen0 (XWD).
	display := displaytest.Xvfb(t, "1280x800x24", "-fbdir", dir)

	result := filepath.Join(dir, "protocol")
	xt := exec.CommandContext(ctx, "xterm", "-display", display, "-geometry", "120x40+0+0",
		"-ti", "vt340", "-xrm", "XTerm*decTerminalID: vt340", "-xrm", "XTerm*allowWindowOps: true",
		"-xrm", "XTerm*numColorRegisters: 256", "-e", os.Args[0], "-test.run", "^$")
	xt.Env = append(os.Environ(), "TABWARDEN_XTERM_SCREEN="+result, "DISPLAY="+display)
	xt.Env = append(xt.Env, "TMUX=", "TERM=xterm") // xterm sets TERM; tmux outside must not leak in
	var xlog strings.Builder
	xt.Stderr = &xlog
	if err := xt.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = xt.Process.Kill(); _ = xt.Wait() })

	deadline := time.Now().Add(30 * time.Second)
	var proto []byte
	for len(proto) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the screen in xterm never finished detection; xterm says: %s", xlog.String())
		}
		time.Sleep(100 * time.Millisecond)
		proto, _ = os.ReadFile(result)
	}
	if string(proto) != string(PageSixel) {
		t.Fatalf("xterm as a VT340 detected as %q, want sixel", proto)
	}

	var box image.Rectangle
	var n int
	var scr image.Image
	var err error
	for {
		scr, err = readXWD(filepath.Join(dir, "Xvfb_screen0"))
		if err == nil {
			box, n = blueBox(scr)
			if n > 2000 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no blue block on xterm's screen (%d blue pixels, err %v)", n, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The panel starts at column 61 of 120, under the header, and is 59
	// columns wide; the block is the left half of the picture's width.
	winW := xtermWidth(scr)
	cellW := winW / 120
	t.Logf("blue block %v (%d px) in a %d px wide xterm", box, n, winW)
	if f := os.Getenv("TABWARDEN_XTERM_SHOT"); f != "" {
		if fh, err := os.Create(f); err == nil {
			_ = png.Encode(fh, scr)
			_ = fh.Close()
		}
	}
	if d := box.Min.X - 61*cellW; d < 0 || d > cellW {
		t.Errorf("the block starts at x=%d, want the panel's first column, %d (cells of %d px)", box.Min.X, 61*cellW, cellW)
	}
	// Three rows down (the header's two lines, then the panel's title);
	// a cell is 1.5 to 3 times as tall as wide.
	if box.Min.Y < 3*cellW*3/2 || box.Min.Y > 3*cellW*3 {
		t.Errorf("the block starts at y=%d, want the row under the panel's title, 3 rows down (cells %d px wide)", box.Min.Y, cellW)
	}
	if area := box.Dx() * box.Dy(); n < area*95/100 {
		t.Errorf("the block is %d blue pixels in a %v box: not a solid picture", n, box)
	}
	if d := box.Dx() - 59*cellW/2; d < -cellW || d > cellW {
		t.Errorf("the block is %d px wide, want half the panel's %d", box.Dx(), 59*cellW)
	}

	if err := os.WriteFile(result+".hide", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for {
		scr, err = readXWD(filepath.Join(dir, "Xvfb_screen0"))
		if err == nil {
			if _, n = blueBox(scr); n == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d blue pixels stay on xterm's screen after the view was hidden", n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// blueBox is the bounding box and count of the fixture's blue pixels.
func blueBox(img image.Image) (image.Rectangle, int) {
	b := img.Bounds()
	var box image.Rectangle
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if near(img.At(x, y), blue) {
				n++
				p := image.Rect(x, y, x+1, y+1)
				if box.Empty() {
					box = p
				} else {
					box = box.Union(p)
				}
			}
		}
	}
	return box, n
}

// xtermWidth is the width of xterm's window at +0+0: the last column of
// the screen's top rows that is not the root window's black.
func xtermWidth(img image.Image) int {
	b := img.Bounds()
	w := 0
	for y := b.Min.Y; y < b.Min.Y+40 && y < b.Max.Y; y++ {
		for x := b.Max.X - 1; x > w; x-- {
			if r, g, bb, _ := img.At(x, y).RGBA(); r|g|bb != 0 {
				w = x + 1
				break
			}
		}
	}
	return w
}

// readXWD reads Xvfb's screen file: an XWD header, a colormap, then 32-bit
// pixels with the header's masks.
func readXWD(path string) (image.Image, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) < 100 {
		return nil, fmt.Errorf("short XWD")
	}
	u := func(i int) uint32 { return binary.BigEndian.Uint32(data[4*i:]) }
	hdr, w, h := int(u(0)), int(u(4)), int(u(5))
	order, bpp, bpl := u(7), int(u(11)), int(u(12))
	ncolors := int(u(19))
	if bpp != 32 {
		return nil, fmt.Errorf("XWD with %d bits per pixel", bpp)
	}
	off := hdr + 12*ncolors
	if len(data) < off+bpl*h {
		return nil, fmt.Errorf("XWD truncated")
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			p := data[off+y*bpl+4*x:]
			var v uint32
			if order == 0 {
				v = binary.LittleEndian.Uint32(p)
			} else {
				v = binary.BigEndian.Uint32(p)
			}
			img.SetRGBA(x, y, color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255})
		}
	}
	return img, nil
}
