package tui

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"image"
	"image/color"
	"image/png"
	"strconv"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/kitty"
)

// The page view's image protocols (kitty graphics, sixel, iTerm2). The
// panel's cells stay under bubbletea's cell renderer:
//
//   - kitty: the picture is transmitted once per frame (PNG, base64 in
//     chunks of at most 4096 bytes) as a virtual placement (U=1) of one
//     image id per screen, and the panel's cells are kitty's Unicode
//     placeholders (U+10EEEE with row and column diacritics, the image id in
//     the foreground colour). The placeholders are ordinary cells, so the
//     renderer draws them like any text; they do not change from frame to
//     frame, only the image behind the id does.
//   - sixel and iTerm2: the panel's cells are blank (so the renderer, which
//     writes only cells that changed, leaves them alone) and the picture is
//     written with tea.Raw at the panel's place: save cursor, move to the
//     panel's top-left, the image, restore cursor. bubbletea flushes raw
//     output before the renderer's own in each frame, so a picture is
//     written imageDelay after its blank cells were rendered (the renderer
//     has flushed them by then) and once more a second later, and again on
//     a clock tick after the screen's text changed (a row the renderer
//     repaints whole can erase part of it); moving or hiding the panel
//     clears the screen (a full repaint erases graphics).
//
// The mark is drawn into the pixels before encoding. A picture is encoded
// only when a new frame arrives or its size, place or mark changes, one at a
// time off the event loop (a newer frame waiting replaces an older one), and
// goes nowhere but this screen's terminal.

const (
	// kittyImageID is the kitty image id of a screen's picture: below 256,
	// so the placeholders' foreground colour is a 256-colour index that no
	// colour profile of a kitty terminal downsamples.
	kittyImageID = 211
	// imageDelay is how long after its blank cells a sixel or iTerm2 picture
	// is written: several renderer frames (60 fps).
	imageDelay = 50 * time.Millisecond
	// imageRewrite writes a sixel or iTerm2 picture again, in case a
	// renderer repaint of a row (one with wide characters is repainted
	// whole) erased part of it.
	imageRewrite = time.Second
	// maxPlaceholders is how many rows or columns kitty's diacritics number.
	maxPlaceholders = 297
)

// imageKey is everything a written picture depends on.
type imageKey struct {
	proto            PageProtocol
	seq              uint64
	img              image.Image
	cssW, cssH       float64
	x, y             int // the picture's top-left cell
	cols, rows       int
	pxW, pxH         int
	mark             [4]float64
	marked           bool
	focus            [4]float64 // the focused field's box while typing
	focused          bool
	screenW, screenH int
}

// pageImage is a screen's image state (a value in pageView).
type pageImage struct {
	want  imageKey // what the screen should show; zero: nothing
	busy  bool     // an encode is running
	gen   uint64
	shown imageKey // written last; zero: nothing on screen
	seq   string
	wgen  uint64
	// drawnHash is the screen's hash when the picture was last written.
	drawnHash uint64
}

type (
	pageImageMsg struct {
		gen uint64
		k   imageKey
		seq string
	}
	pageImageWriteMsg struct {
		gen   uint64
		again bool
	}
)

func isImageProto(p PageProtocol) bool {
	return p == PageKitty || p == PageSixel || p == PageITerm2
}

// imageWanted is the picture the screen should show now.
func (m Model) imageWanted() imageKey {
	proto := m.pageProto()
	f := m.page.frame
	tab := m.pageTab()
	if !isImageProto(proto) || !m.page.on || m.pageYields() || m.page.text || f.img == nil || tab == "" || m.page.err != "" {
		return imageKey{}
	}
	x, y, cols, rows := m.pageGeom().picture(f)
	if cols <= 0 || rows <= 0 {
		return imageKey{}
	}
	cw, ch := m.cellSize()
	b := f.img.Bounds()
	// As many pixels as the cells show, never more than the frame has.
	s := min(1, float64(b.Dx())/float64(cols*cw), float64(b.Dy())/float64(rows*ch))
	k := imageKey{proto: proto, seq: f.seq, img: f.img, cssW: f.cssW, cssH: f.cssH, x: x, y: y, cols: cols, rows: rows,
		pxW: max(1, int(float64(cols*cw)*s)), pxH: max(1, int(float64(rows*ch)*s))}
	if proto == PageSixel {
		// Sixel draws pixel for pixel: the panel's cells, in whole bands
		// of six pixel rows so the last band does not spill below.
		k.pxW, k.pxH = cols*cw, max(6, rows*ch-rows*ch%6)
	}
	k.mark, k.marked = m.pageMark(tab)
	k.focus, k.focused = m.focusBox(tab)
	k.screenW, k.screenH = m.size()
	return k
}

// syncImage starts encoding the picture the screen wants, or clears the
// one it shows when it wants none.
func (m *Model) syncImage() tea.Cmd {
	want := m.imageWanted()
	im := &m.page.img
	if want == im.want {
		return nil
	}
	im.want = want
	if want == (imageKey{}) {
		return m.clearImage()
	}
	if im.busy {
		return nil // the running encode checks want when it ends
	}
	return m.encodeImage(want)
}

func (m *Model) clearImage() tea.Cmd {
	im := &m.page.img
	shown := im.shown
	im.shown, im.seq = imageKey{}, ""
	im.wgen++
	switch shown.proto {
	case PageKitty:
		return tea.Raw(kittyDelete())
	case PageSixel, PageITerm2:
		return tea.ClearScreen
	}
	return nil
}

func (m *Model) encodeImage(k imageKey) tea.Cmd {
	im := &m.page.img
	im.busy = true
	im.gen++
	gen := im.gen
	return func() tea.Msg {
		return pageImageMsg{gen: gen, k: k, seq: encodePicture(k)}
	}
}

// imageUpdate handles the image messages; it reports whether msg was one.
func (m *Model) imageUpdate(msg tea.Msg) (tea.Cmd, bool) {
	im := &m.page.img
	switch msg := msg.(type) {
	case pageImageMsg:
		if msg.gen != im.gen {
			return nil, true
		}
		im.busy = false
		if msg.k != im.want {
			if im.want == (imageKey{}) {
				return nil, true
			}
			return m.encodeImage(im.want), true // a newer frame or size waits
		}
		moved := im.shown != (imageKey{}) && (im.shown.x != msg.k.x || im.shown.y != msg.k.y ||
			im.shown.cols != msg.k.cols || im.shown.rows != msg.k.rows)
		im.shown, im.seq = msg.k, msg.seq
		im.wgen++
		if msg.k.proto == PageKitty {
			return tea.Raw(msg.seq), true
		}
		gen := im.wgen
		write := tea.Tick(imageDelay, func(time.Time) tea.Msg { return pageImageWriteMsg{gen: gen} })
		if moved {
			return tea.Batch(tea.ClearScreen, write), true
		}
		return write, true
	case pageImageWriteMsg:
		if msg.gen != im.wgen || im.seq == "" {
			return nil, true
		}
		im.drawnHash = m.pageShared.viewHash.Load()
		if msg.again {
			return tea.Raw(im.seq), true
		}
		gen := im.wgen
		return tea.Batch(tea.Raw(im.seq), tea.Tick(imageRewrite, func(time.Time) tea.Msg { return pageImageWriteMsg{gen: gen, again: true} })), true
	}
	return nil, false
}

// noteView records the hash of the screen View drew, while a sixel or
// iTerm2 picture is shown.
func (m Model) noteView(content string) {
	if p := m.page.img.shown.proto; p != PageSixel && p != PageITerm2 {
		return
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(content))
	m.pageShared.viewHash.Store(h.Sum64())
}

// rewriteImage writes a sixel or iTerm2 picture again (on the clock's
// tick, so at most once a second) when the screen's text changed since it
// was written: a change the renderer made around the picture (a row it
// repainted whole, cells it shifted) may have erased part of it.
func (m *Model) rewriteImage() tea.Cmd {
	im := &m.page.img
	if p := im.shown.proto; (p != PageSixel && p != PageITerm2) || im.seq == "" ||
		m.pageShared.viewHash.Load() == im.drawnHash {
		return nil
	}
	gen := im.wgen
	return tea.Tick(imageDelay, func(time.Time) tea.Msg { return pageImageWriteMsg{gen: gen, again: true} })
}

// quit ends the program, first freeing a kitty picture in the terminal
// (bubbletea writes raw output still queued when it shuts down).
func (m Model) quit() tea.Cmd {
	if m.page.img.shown.proto == PageKitty {
		return tea.Sequence(tea.Raw(kittyDelete()), tea.Quit)
	}
	return tea.Quit
}

// encodePicture is the terminal output that shows k.
func encodePicture(k imageKey) string {
	img := pictureImage(k)
	switch k.proto {
	case PageKitty:
		return kittyTransmit(img, k.cols, k.rows)
	case PageSixel:
		return placeAt(k.x, k.y, ansi.SixelGraphics(0, 1, 0, []byte(encodeSixel(img))))
	case PageITerm2:
		data := encodePNG(img)
		seq := "\x1b]1337;File=inline=1;size=" + strconv.Itoa(len(data)) +
			";width=" + strconv.Itoa(k.cols) + ";height=" + strconv.Itoa(k.rows) +
			";preserveAspectRatio=0:" + base64.StdEncoding.EncodeToString(data) + "\a"
		return placeAt(k.x, k.y, seq)
	}
	return ""
}

// placeAt writes seq with the cursor at cell (x, y) and puts the cursor
// back where the renderer left it.
func placeAt(x, y int, seq string) string {
	return ansi.SaveCursor + ansi.CursorPosition(x+1, y+1) + seq + ansi.RestoreCursor
}

// pictureImage is k's frame scaled to k's pixels, the mark drawn in.
func pictureImage(k imageKey) *image.RGBA {
	w, h := k.pxW, k.pxH
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	px := make([]color.RGBA, w*h)
	b := k.img.Bounds()
	sx, sy := float64(b.Dx())/float64(w), float64(b.Dy())/float64(h)
	for y := 0; y < h; y++ {
		y0 := b.Min.Y + int(float64(y)*sy)
		y1 := max(y0+1, b.Min.Y+int(float64(y+1)*sy))
		for x := 0; x < w; x++ {
			x0 := b.Min.X + int(float64(x)*sx)
			x1 := max(x0+1, b.Min.X+int(float64(x+1)*sx))
			px[y*w+x] = average(k.img, x0, y0, x1, y1)
		}
	}
	if k.cssW > 0 && k.cssH > 0 {
		kx, ky := float64(w)/k.cssW, float64(h)/k.cssH
		// A line as thick as a quarter of a cell reads at any size.
		t := max(1, w/k.cols/4)
		thick := func(mark [4]float64, c color.RGBA) {
			for i := 0; i < t; i++ {
				mk := mark
				if mk[2] > 0 && mk[3] > 0 {
					d := float64(i) / kx
					mk = [4]float64{mk[0] + d, mk[1] + d, max(0, mk[2]-2*d), max(0, mk[3]-2*d)}
					if mk[2] <= 0 || mk[3] <= 0 {
						break
					}
				}
				drawMark(px, w, h, mk, kx, ky, c)
			}
		}
		if k.focused {
			thick(k.focus, focusColour)
		}
		if k.marked {
			thick(k.mark, markColour)
		}
	}
	for i, c := range px {
		out.Pix[4*i], out.Pix[4*i+1], out.Pix[4*i+2], out.Pix[4*i+3] = c.R, c.G, c.B, 255
	}
	return out
}

func encodePNG(img image.Image) []byte {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil
	}
	return buf.Bytes()
}

// kittyTransmit replaces the screen's image with img (PNG) and places it
// virtually over cols×rows placeholder cells, quietly (q=2: no replies).
func kittyTransmit(img image.Image, cols, rows int) string {
	data := base64.StdEncoding.EncodeToString(encodePNG(img))
	var sb strings.Builder
	sb.WriteString(kittyDelete())
	first := fmt.Sprintf("a=T,f=100,t=d,i=%d,U=1,c=%d,r=%d,q=2", kittyImageID, cols, rows)
	for i := 0; i < len(data) || i == 0; i += kitty.MaxChunkSize {
		end := min(len(data), i+kitty.MaxChunkSize)
		more := "1"
		if end == len(data) {
			more = "0"
		}
		sb.WriteString("\x1b_G")
		if i == 0 {
			sb.WriteString(first + ",")
		}
		sb.WriteString("m=" + more + ";" + data[i:end] + "\x1b\\")
		if end == len(data) {
			break
		}
	}
	return sb.String()
}

// kittyDelete frees the screen's image and its placements.
func kittyDelete() string {
	return fmt.Sprintf("\x1b_Ga=d,d=I,i=%d,q=2\x1b\\", kittyImageID)
}

// placeholderCache keeps a screen's kitty placeholder lines per size.
type placeholderCache struct {
	mu         sync.Mutex
	cols, rows int
	lines      []string
}

func (c *placeholderCache) get(cols, rows int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lines != nil && c.cols == cols && c.rows == rows {
		return c.lines
	}
	c.cols, c.rows, c.lines = cols, rows, kittyPlaceholders(cols, rows)
	return c.lines
}

// kittyPlaceholders is the panel's cells for a kitty picture: each cell the
// placeholder with its row and column diacritics (every cell carries both,
// so a cell the renderer rewrites alone still names its place), the image
// id as the foreground's 256-colour index.
func kittyPlaceholders(cols, rows int) []string {
	out := make([]string, rows)
	var sb strings.Builder
	for r := 0; r < rows; r++ {
		sb.Reset()
		sb.WriteString("\x1b[38;5;" + strconv.Itoa(kittyImageID) + "m")
		for c := 0; c < cols; c++ {
			sb.WriteRune(kitty.Placeholder)
			sb.WriteRune(kitty.Diacritic(r))
			sb.WriteRune(kitty.Diacritic(c))
		}
		sb.WriteString("\x1b[39m")
		out[r] = sb.String()
	}
	return out
}
