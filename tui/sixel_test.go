package tui

import (
	"image"
	"image/color"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi/sixel"
)

// encodeSixel's picture decodes (x/ansi's sixel decoder) to the image it
// was given: the flat block exactly, a gradient of more colours than the
// palette holds to within a few levels, every pixel in its place.
func TestEncodeSixelRoundTrip(t *testing.T) {
	const w, h = 301, 97 // neither a multiple of 6 nor of anything
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), 128, 255}
			if x < 100 && y < 40 {
				c = blue
			}
			img.SetRGBA(x, y, c)
		}
	}
	got, err := (&sixel.Decoder{}).Decode(strings.NewReader(encodeSixel(img)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Bounds().Dx() != w || got.Bounds().Dy() != h {
		t.Fatalf("decoded %v, want %dx%d", got.Bounds(), w, h)
	}
	var worst, total int
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r, g, b, _ := got.At(x, y).RGBA()
			want := img.RGBAAt(x, y)
			d := max(abs(int(r>>8)-int(want.R)), abs(int(g>>8)-int(want.G)), abs(int(b>>8)-int(want.B)))
			worst, total = max(worst, d), total+d
			if x < 100 && y < 40 && d > 3 {
				t.Fatalf("block pixel %d,%d decoded %v, want %v", x, y, got.At(x, y), want)
			}
		}
	}
	if mean := float64(total) / (w * h); mean > 6 || worst > 24 {
		t.Errorf("gradient off by %.1f on average, %d at worst", mean, worst)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
