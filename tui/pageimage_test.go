package tui

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi/sixel"

	"github.com/tabwarden/tabwarden/consent"
)

// fakeTerm is the terminal a program runs on in these tests: it reads the
// program's output and, when it sees DA1 asked, answers the queries it
// understands in order, over the program's input, as a real terminal
// would. A zero fakeTerm never answers (a pipe, a plain SSH client).
type fakeTerm struct {
	kitty   bool   // answers the kitty graphics query with OK
	version string // XTVERSION reply; "" none
	da1     string // DA1 attributes, e.g. "62;4;22"; "" no reply at all
	cellW   int    // CSI 16 t reply; 0 none

	mu       sync.Mutex
	out      bytes.Buffer
	answered bool
	in       *io.PipeWriter
	changed  chan struct{}
}

func (ft *fakeTerm) Write(p []byte) (int, error) {
	ft.mu.Lock()
	ft.out.Write(p)
	s := ft.out.String()
	reply := ""
	if !ft.answered && ft.da1 != "" && strings.Contains(s, "\x1b[c") {
		ft.answered = true
		if ft.kitty && strings.Contains(s, "\x1b_Gi=31,") {
			reply += "\x1b_Gi=31;OK\x1b\\"
		}
		if ft.version != "" && strings.Contains(s, "\x1b[>q") {
			reply += "\x1bP>|" + ft.version + "\x1b\\"
		}
		if ft.cellW > 0 && strings.Contains(s, "\x1b[16t") {
			reply += "\x1b[6;20;10t"
		}
		reply += "\x1b[?" + ft.da1 + "c"
	}
	ft.mu.Unlock()
	select {
	case ft.changed <- struct{}{}:
	default:
	}
	if reply != "" {
		go func() { _, _ = io.WriteString(ft.in, reply) }()
	}
	return len(p), nil
}

func (ft *fakeTerm) output() string {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.out.String()
}

// waitOutput waits until the program's output satisfies cond.
func (ft *fakeTerm) waitOutput(t *testing.T, what string, cond func(string) bool) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if s := ft.output(); cond(s) {
			return s
		}
		select {
		case <-ft.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// runOnTerm runs the real program on ft with env; stop ends it and returns
// the final model.
func runOnTerm(t *testing.T, ft *fakeTerm, opts Options, s consent.State, env ...string) (p *tea.Program, stop func() Model) {
	t.Helper()
	r, w := io.Pipe()
	ft.in, ft.changed = w, make(chan struct{}, 1)
	opts.Version, opts.Now = "v0.1.0", fixedClock
	if opts.Page == nil {
		opts.Page = newFakePage()
	}
	m := New(newFake(s), opts)
	p = tea.NewProgram(m, tea.WithInput(r), tea.WithOutput(ft), tea.WithWindowSize(120, 40),
		tea.WithEnvironment(append([]string{"TERM=xterm-256color", "COLORTERM=truecolor"}, env...)), tea.WithoutSignals(),
		// A real terminal (or SSH pty) is detected as true colour; a pipe
		// would get no colour at all.
		tea.WithColorProfile(colorprofile.TrueColor))
	done := make(chan tea.Model, 1)
	go func() {
		fm, _ := p.Run()
		done <- fm
	}()
	var once sync.Once
	var final Model
	stop = func() Model {
		once.Do(func() {
			p.Quit()
			select {
			case fm := <-done:
				final, _ = fm.(Model)
			case <-time.After(10 * time.Second):
				t.Error("the program did not stop")
			}
			_ = w.Close()
			m.Close()
		})
		return final
	}
	t.Cleanup(func() { stop() })
	return p, stop
}

var (
	kittyChunk = regexp.MustCompile("\x1b_G([^;\x1b]*);([^\x1b]*)\x1b\\\\")
	sixelSeq   = regexp.MustCompile("\x1b7\x1b\\[(\\d+);(\\d+)H\x1bP0;1q([^\x1b]*)\x1b\\\\\x1b8")
	itermSeq   = regexp.MustCompile("\x1b7\x1b\\[(\\d+);(\\d+)H\x1b]1337;File=([^:]*):([A-Za-z0-9+/=]*)\a\x1b8")
)

// decodeKitty is the last picture transmitted (a=T) in out.
func decodeKitty(t *testing.T, out string) (image.Image, string) {
	t.Helper()
	var data, opts string
	for _, m := range kittyChunk.FindAllStringSubmatch(out, -1) {
		if strings.Contains(m[1], "a=T") {
			data, opts = "", m[1]
		}
		if opts != "" && strings.Contains(m[1], "m=") {
			data += m[2]
		}
	}
	if opts == "" {
		t.Fatal("no kitty transmission in the output")
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.Fatalf("kitty payload: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("kitty PNG: %v", err)
	}
	return img, opts
}

func near(c color.Color, want color.RGBA) bool {
	r, g, b, _ := c.RGBA()
	d := func(a uint32, w uint8) bool { x := int(a>>8) - int(w); return x > -8 && x < 8 }
	return d(r, want.R) && d(g, want.G) && d(b, want.B)
}

var (
	blue  = color.RGBA{0, 160, 255, 255}
	white = color.RGBA{255, 255, 255, 255}
)

// checkPicture: the fixture frame's blue block fills the picture's
// top-left quarter, the rest is white.
func checkPicture(t *testing.T, name string, img image.Image) {
	t.Helper()
	b := img.Bounds()
	if b.Dx() < 40 || b.Dy() < 30 {
		t.Fatalf("%s: a %v picture", name, b)
	}
	at := func(fx, fy float64) color.Color {
		return img.At(b.Min.X+int(fx*float64(b.Dx())), b.Min.Y+int(fy*float64(b.Dy())))
	}
	if c := at(0.2, 0.2); !near(c, blue) {
		t.Errorf("%s: %v in the block's place, want the block's blue", name, c)
	}
	if c := at(0.7, 0.7); !near(c, white) {
		t.Errorf("%s: %v outside the block, want white", name, c)
	}
	if c := at(0.7, 0.2); !near(c, white) {
		t.Errorf("%s: %v right of the block, want white", name, c)
	}
}

// Each terminal's replies pick its protocol, and v then writes the page in
// it: the output holds the protocol's image, and decoded it is the page
// (the block's blue in its place).
func TestPageViewProtocolFromTheTerminalsReplies(t *testing.T) {
	for _, tc := range []struct {
		name string
		term *fakeTerm
		want PageProtocol
	}{
		{"kitty", &fakeTerm{kitty: true, version: "kitty(0.39.1)", da1: "62;22"}, PageKitty},
		{"iterm2", &fakeTerm{version: "iTerm2 3.5.10", da1: "62;4;22"}, PageITerm2},
		{"sixel", &fakeTerm{version: "XTerm(397)", da1: "63;1;2;4;6;9;15;16;22;28", cellW: 10}, PageSixel},
		{"plain", &fakeTerm{version: "XTerm(397)", da1: "62;1;6;22"}, PageHalfBlock},
		// WezTerm answers the kitty query but draws no placeholders.
		{"wezterm", &fakeTerm{kitty: true, version: "WezTerm 20240203-110809-5046fc22", da1: "65;4;6;18;22"}, PageITerm2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, stop := runOnTerm(t, tc.term, Options{}, baseState())
			tc.term.waitOutput(t, "the queries", func(s string) bool { return strings.Contains(s, "\x1b[c") })
			// The view opens once the replies are in: until then it draws
			// half-blocks.
			time.Sleep(300 * time.Millisecond)
			p.Send(press("v"))
			var out string
			switch tc.want {
			case PageKitty:
				// The picture and the cells that place it may come in
				// different frames: wait for both.
				out = tc.term.waitOutput(t, "a kitty picture and its placeholder cells", func(s string) bool {
					return strings.Contains(s, "m=0;") && strings.Contains(s, "\x1b[38;5;211m\U0010EEEE")
				})
				img, opts := decodeKitty(t, out)
				checkPicture(t, tc.name, img)
				for _, o := range []string{"U=1", "i=211", "f=100"} {
					if !strings.Contains(opts, o) {
						t.Errorf("kitty options %q lack %s", opts, o)
					}
				}
			case PageSixel:
				out = tc.term.waitOutput(t, "a sixel picture", sixelSeq.MatchString)
				m := sixelSeq.FindStringSubmatch(out)
				img, err := (&sixel.Decoder{}).Decode(strings.NewReader(m[3]))
				if err != nil {
					t.Fatalf("sixel: %v", err)
				}
				checkPicture(t, tc.name, img)
				if m[1] != "4" || m[2] != "62" { // row 4 (under the header and the title), column 62: the side panel's picture
					t.Errorf("sixel written at row %s column %s, want 4;62", m[1], m[2])
				}
				// The reported 10×20 cells: the picture is as wide as its cells.
				_ = stop()
			case PageITerm2:
				out = tc.term.waitOutput(t, "an iTerm2 picture", itermSeq.MatchString)
				m := itermSeq.FindStringSubmatch(out)
				raw, err := base64.StdEncoding.DecodeString(m[4])
				if err != nil {
					t.Fatal(err)
				}
				img, err := png.Decode(bytes.NewReader(raw))
				if err != nil {
					t.Fatal(err)
				}
				checkPicture(t, tc.name, img)
				if !strings.Contains(m[3], "inline=1") || !strings.Contains(m[3], "width=") {
					t.Errorf("iTerm2 arguments %q", m[3])
				}
			case PageHalfBlock:
				out = tc.term.waitOutput(t, "half-blocks", func(s string) bool { return strings.Contains(s, "38;2;0;160;255") })
			}
			final := stop()
			if final.term.proto != tc.want {
				t.Errorf("detected %q, want %q", final.term.proto, tc.want)
			}
			for p, marker := range map[PageProtocol]string{PageKitty: "a=T,", PageSixel: "\x1bP0;1q", PageITerm2: "1337;File="} {
				if p != tc.want && strings.Contains(out, marker) {
					t.Errorf("the output has a %s picture too", p)
				}
			}
		})
	}
}

// A terminal that never answers gets half-blocks once the deadline passes;
// so does one under tmux, which is not even asked.
func TestPageViewHalfBlocksWithoutReplies(t *testing.T) {
	silent := &fakeTerm{}
	p, stop := runOnTerm(t, silent, Options{}, baseState())
	silent.waitOutput(t, "the queries", func(s string) bool { return strings.Contains(s, "\x1b[c") })
	time.Sleep(detectTimeout + 300*time.Millisecond)
	p.Send(press("v"))
	silent.waitOutput(t, "half-blocks", func(s string) bool { return strings.Contains(s, "38;2;0;160;255") })
	time.Sleep(200 * time.Millisecond) // time for a picture to follow, if one were coming
	out := silent.output()
	final := stop()
	if final.term.proto != PageHalfBlock || final.term.detecting {
		t.Errorf("no reply: protocol %q (detecting %v), want half-blocks", final.term.proto, final.term.detecting)
	}
	if strings.Contains(out, "a=T,") || strings.Contains(out, "\x1bP0;1q") || strings.Contains(out, "1337;File=") {
		t.Error("an image escape went to a terminal that never answered")
	}

	// Under tmux (even one whose outer terminal is kitty): no query, half-blocks.
	muxed := &fakeTerm{kitty: true, da1: "62;4"}
	p, stop = runOnTerm(t, muxed, Options{}, baseState(), "TMUX=/tmp/tmux-0/default,1,0")
	p.Send(press("v"))
	out = muxed.waitOutput(t, "half-blocks", func(s string) bool { return strings.Contains(s, "38;2;0;160;255") })
	final = stop()
	if strings.Contains(out, "\x1b[c") || strings.Contains(out, "\x1b_Gi=31") {
		t.Error("the screen under tmux queried the terminal")
	}
	if final.term.proto != PageHalfBlock {
		t.Errorf("under tmux: %q", final.term.proto)
	}
}

// --page-view=sixel draws sixel with no reply at all; the cell size the
// terminal reports sizes the picture.
func TestPageViewForcedProtocol(t *testing.T) {
	silent := &fakeTerm{}
	p, stop := runOnTerm(t, silent, Options{PageProtocol: PageSixel}, baseState())
	p.Send(press("v"))
	out := silent.waitOutput(t, "a sixel picture", sixelSeq.MatchString)
	m := sixelSeq.FindStringSubmatch(out)
	img, err := (&sixel.Decoder{}).Decode(strings.NewReader(m[3]))
	if err != nil {
		t.Fatalf("sixel: %v", err)
	}
	checkPicture(t, "forced sixel", img)
	stop()
	if strings.Contains(out, "\x1b[c") {
		t.Error("a forced protocol still asked DA1")
	}
	if strings.Contains(out, "38;2;0;160;255m▀") {
		t.Error("half-blocks drawn under a forced sixel")
	}
}

// The mark is in the picture's pixels, and it goes when the review does.
func TestPageImageMarksTheTarget(t *testing.T) {
	rv := actionReview(consent.Action{Type: consent.ActionClick, Ref: "e1", Role: "button", Name: "Go", Box: &[4]float64{400, 300, 200, 150}})
	for _, proto := range []PageProtocol{PageKitty, PageSixel, PageITerm2} {
		page := newFakePage()
		m := New(newFake(withFocus(baseState(), rv)), Options{Version: "v0.1.0", Now: fixedClock, Page: page, PageProtocol: proto})
		m = step(m, tea.WindowSizeMsg{Width: 120, Height: 40})
		m.page.on = true
		m.page.frame = pageFrame{img: page.img, cssW: 800, cssH: 600, seq: 1}
		k := m.imageWanted()
		if k == (imageKey{}) {
			t.Fatalf("%s: no picture wanted", proto)
		}
		img := pictureImage(k)
		b := img.Bounds()
		// The box's left edge at x = 400/800 of the width, halfway down it.
		onEdge := img.At(b.Dx()*400/800, b.Dy()*375/600)
		if !near(onEdge, markColour) {
			t.Errorf("%s: %v on the box's edge, want the mark's colour", proto, onEdge)
		}
		inside := img.At(b.Dx()*500/800, b.Dy()*375/600)
		if near(inside, markColour) {
			t.Errorf("%s: the box is filled", proto)
		}
		m.state = baseState()
		k2 := m.imageWanted()
		if k2 == k {
			t.Errorf("%s: the picture did not change when the review left", proto)
		}
		if c := pictureImage(k2).At(b.Dx()*400/800, b.Dy()*375/600); near(c, markColour) {
			t.Errorf("%s: the mark stayed after the review left", proto)
		}
		m.Close()
	}
}

// Hiding the view takes the picture off the screen: kitty frees the image,
// sixel and iTerm2 clear the screen so the renderer repaints over it.
func TestPageImageClearedWhenHidden(t *testing.T) {
	for _, proto := range []PageProtocol{PageKitty, PageSixel} {
		ft := &fakeTerm{}
		p, stop := runOnTerm(t, ft, Options{PageProtocol: proto}, baseState())
		p.Send(press("v"))
		marker := "a=T,"
		if proto == PageSixel {
			marker = "\x1bP0;1q"
		}
		before := ft.waitOutput(t, "a picture", func(s string) bool { return strings.Contains(s, marker) })
		n := len(before)
		p.Send(press("v"))
		out := ft.waitOutput(t, "the picture cleared", func(s string) bool {
			rest := s[n:]
			if proto == PageKitty {
				return strings.Contains(rest, "\x1b_Ga=d,d=I,i=211,q=2\x1b\\")
			}
			return strings.Contains(rest, "\x1b[2J")
		})
		// A kitty picture is transmitted on its own and placed by the
		// frame's placeholder cells, so its bytes may come before the
		// frame that draws the panel: look in everything before the clear.
		if !strings.Contains(out, "Page view") {
			t.Errorf("%s: the panel was never drawn", proto)
		}
		stop()
	}
}

// A sixel picture is written again (on the next clock tick) after the
// screen around it changed, and not while nothing changes.
func TestPageImageRewrittenAfterTheScreenChanged(t *testing.T) {
	ft := &fakeTerm{}
	p, stop := runOnTerm(t, ft, Options{PageProtocol: PageSixel}, baseState())
	defer stop()
	p.Send(press("v"))
	count := func() int { return strings.Count(ft.output(), "\x1bP0;1q") }
	ft.waitOutput(t, "the picture and its second write", func(string) bool { return count() >= 2 })
	time.Sleep(2500 * time.Millisecond)
	quiet := count()
	time.Sleep(2200 * time.Millisecond)
	if n := count(); n != quiet {
		t.Fatalf("%d more writes of an unchanged screen's picture", n-quiet)
	}
	s := baseState()
	s.Conversations[0].Name = "renamed-agent"
	p.Send(stateChangedMsg{state: s})
	ft.waitOutput(t, "the picture written again", func(string) bool { return count() > quiet })
}

// Quitting with a kitty picture on screen frees it in the terminal first.
func TestPageImageKittyFreedOnQuit(t *testing.T) {
	ft := &fakeTerm{}
	p, stop := runOnTerm(t, ft, Options{PageProtocol: PageKitty, Remote: true}, baseState())
	p.Send(press("v"))
	ft.waitOutput(t, "a kitty picture", func(s string) bool { return strings.Contains(s, "a=T,") })
	p.Send(press("q")) // an SSH screen's q leaves at once
	p.Wait()
	out := ft.output()
	stop()
	last := strings.LastIndex(out, "a=T,")
	if !strings.Contains(out[last:], kittyDelete()) {
		t.Error("the program ended without freeing its kitty picture")
	}
}
