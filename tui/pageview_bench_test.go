package tui

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// benchFrame is a 480×303 JPEG like the ones Chromium sends for a 780×493
// viewport at the view's frame size: a gradient with a block, so the
// encoding has colour runs of every length.
func benchFrame(b *testing.B) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 480, 303))
	for y := 0; y < 303; y++ {
		for x := 0; x < 480; x++ {
			c := color.RGBA{uint8(x * 255 / 480), uint8(y * 255 / 303), 128, 255}
			if x < 240 && y < 120 {
				c = color.RGBA{0, 160, 255, 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 60}); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkPageViewFrame is one frame of the page view at 120×40 with
// half-blocks, from the bytes Chromium sends to the screen's text: JPEG
// decode (the browser side's share), the frame message, and the render.
// One op is one frame on one core: frames/s is the most one core draws;
// ns/op is the CPU per frame.
func BenchmarkPageViewFrame(b *testing.B) {
	data := benchFrame(b)
	m, ps := benchPageModel(b, PageHalfBlock)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		img, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		m = step(m, pageFrameMsg{ps: ps, f: pageFrame{img: img, cssW: 780, cssH: 493, seq: uint64(i + 1)}})
		_ = m.View()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "frames/s")
}

// BenchmarkPageViewFrameImage is one frame of the page view at 120×40 in
// each image protocol, from the bytes Chromium sends to the bytes the
// terminal gets: JPEG decode, the frame message, the render of the cells
// (kitty's placeholders, or blanks), and the picture's encoding (scaling,
// the mark, PNG or sixel), which runs off the event loop. bytes/frame is
// what one frame sends the terminal (over SSH, the session's traffic).
func BenchmarkPageViewFrameImage(b *testing.B) {
	for _, proto := range []PageProtocol{PageKitty, PageSixel, PageITerm2} {
		b.Run(string(proto), func(b *testing.B) {
			data := benchFrame(b)
			m, ps := benchPageModel(b, proto)
			sent := 0
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				img, err := jpeg.Decode(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				m = step(m, pageFrameMsg{ps: ps, f: pageFrame{img: img, cssW: 780, cssH: 493, seq: uint64(i + 1)}})
				_ = m.View()
				k := m.imageWanted()
				if k == (imageKey{}) {
					b.Fatal("no picture wanted")
				}
				seq := encodePicture(k)
				if seq == "" {
					b.Fatal("nothing encoded")
				}
				sent += len(seq)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "frames/s")
			b.ReportMetric(float64(sent)/float64(b.N), "bytes/frame")
		})
	}
}

// benchPageModel is a 120×40 screen drawing proto with the page view open
// on a stream the benchmark feeds itself.
func benchPageModel(b *testing.B, proto PageProtocol) (Model, *pageStream) {
	b.Helper()
	m := New(newFake(baseState()), Options{Version: "v0.1.0", Now: fixedClock, Page: newFakePage(), PageProtocol: proto})
	b.Cleanup(m.Close)
	m = step(m, tea.WindowSizeMsg{Width: 120, Height: 40})
	m.page.on = true
	ps := &pageStream{tab: "t1", frames: make(chan pageFrame, 1)}
	m.page.stream = ps
	return m, ps
}
