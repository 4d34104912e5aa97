// Package screentest holds what tests of the console's screens share: the
// fixture picture a fake page view shows and a way to read a wide screen's
// review column. Only _test.go files import it; the shipped binary links
// no test kit (stacktest's TestNoShippedPackageImportsTheKit).
package screentest

import (
	"image"
	"image/color"
	"strings"
)

// BlueQuarter is a 160×120 picture of an 800×600 CSS-pixel viewport: the
// fixture's blue block in the top-left quarter, the rest white. A test
// finds the block's colour in a rendered page view.
func BlueQuarter() *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, 160, 120))
	for y := range 120 {
		for x := range 160 {
			c := color.RGBA{255, 255, 255, 255}
			if x < 80 && y < 60 {
				c = color.RGBA{0, 160, 255, 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	return img
}

// RightOfDivider is the screen's text right of the column divider on a
// wide screen (every line whole on a narrow one), so a wrapped sentence of
// the review column reads whole.
func RightOfDivider(screen string) string {
	var out []string
	for _, l := range strings.Split(screen, "\n") {
		if i := strings.LastIndex(l, "│"); i >= 0 {
			l = l[i+len("│"):]
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
