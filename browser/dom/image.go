package dom

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"math"

	"github.com/go-rod/rod/lib/proto"
)

// capture takes the layout viewport as a PNG at CSS pixel size: the clip is
// the visual viewport in page coordinates, scaled by 1/devicePixelRatio so
// one image pixel is one CSS pixel, the unit of click {x,y}.
func (t *Tab) capture(ctx context.Context, dpr float64) ([]byte, *proto.PageViewport, error) {
	t.hideCursorNow(ctx)
	p, cancel := t.call(ctx)
	defer cancel()
	m, err := proto.PageGetLayoutMetrics{}.Call(p)
	if err != nil {
		return nil, nil, err
	}
	vv := m.CSSVisualViewport
	if dpr <= 0 {
		dpr = 1
	}
	clip := &proto.PageViewport{X: vv.PageX, Y: vv.PageY, Width: vv.ClientWidth, Height: vv.ClientHeight, Scale: 1 / dpr}
	img, err := t.shoot(ctx, clip)
	return img, clip, err
}

func (t *Tab) shoot(ctx context.Context, clip *proto.PageViewport) ([]byte, error) {
	p, cancel := t.call(ctx)
	defer cancel()
	res, err := proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng, Clip: clip}.Call(p)
	if err != nil {
		return nil, err
	}
	return res.Data, nil
}

// samePixels reports whether two viewport images agree closely enough for
// a click at (x,y) to hit what the agent saw: no visible change near the
// point, and next to none elsewhere (a blinking caret is tolerated).
func samePixels(a, b []byte, x, y float64) (bool, error) {
	if bytes.Equal(a, b) {
		return true, nil
	}
	ia, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		return false, err
	}
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return false, err
	}
	ra, rb := ia.Bounds(), ib.Bounds()
	if ra.Dx() != rb.Dx() || ra.Dy() != rb.Dy() {
		return false, nil
	}
	const near = 24.0
	diff := 0
	for py := 0; py < ra.Dy(); py++ {
		for px := 0; px < ra.Dx(); px++ {
			if !pixelEqual(ia, ib, ra.Min.X+px, ra.Min.Y+py, rb.Min.X+px, rb.Min.Y+py) {
				if math.Abs(float64(px)-x) <= near && math.Abs(float64(py)-y) <= near {
					return false, nil
				}
				diff++
			}
		}
	}
	return diff*1000 <= ra.Dx()*ra.Dy(), nil
}

func pixelEqual(a, b image.Image, ax, ay, bx, by int) bool {
	r1, g1, b1, _ := a.At(ax, ay).RGBA()
	r2, g2, b2, _ := b.At(bx, by).RGBA()
	const tol = 8 << 8
	d := func(u, v uint32) bool { return u > v+tol || v > u+tol }
	return !d(r1, r2) && !d(g1, g2) && !d(b1, b2)
}
