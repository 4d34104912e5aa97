package tui

import (
	"image"
	"slices"
	"strconv"
	"strings"
)

// encodeSixel is img as sixel data (what goes between DCS q and ST):
// raster attributes, a palette of at most 256 colours, then the bands.
//
// The palette is the image's most common colours, bucketed at 5 bits a
// channel (fewer when 256 buckets do not cover the picture), each the mean
// of the pixels it stands for; every other colour maps to the nearest of
// them. A page's flat areas keep their exact colour (within the sixel
// palette's 1% steps), and a panel-sized frame encodes in a few
// milliseconds: x/ansi's encoder quantises with a median cut and a bitset
// per colour, some 80 ms and 16 MB of garbage per frame.
func encodeSixel(img *image.RGBA) string {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= 0 || h <= 0 {
		return ""
	}
	key := make([]uint16, w*h)
	var colours []sixelRGB
	var index []int16
	// The finest buckets whose 256 most common cover nearly every pixel:
	// 5 bits a channel for a page's flat colours, fewer for photos and
	// gradients, so no pixel lands far from its palette colour.
	for bits := 5; bits >= 3; bits-- {
		var covered float64
		colours, index, covered = sixelPalette(img, key, bits)
		if covered >= 0.99 {
			break
		}
	}

	var sb strings.Builder
	sb.Grow(w * h / 4)
	sb.WriteString("\"1;1;" + strconv.Itoa(w) + ";" + strconv.Itoa(h))
	pct := func(v int) string { return strconv.Itoa((v*100 + 127) / 255) }
	for i, c := range colours {
		sb.WriteString("#" + strconv.Itoa(i) + ";2;" + pct(c.r) + ";" + pct(c.g) + ";" + pct(c.b))
	}
	bits := make([][]byte, len(colours))
	inBand := make([]bool, len(colours))
	var band []int
	for y0 := 0; y0 < h; y0 += 6 {
		band = band[:0]
		for k := 0; k < 6 && y0+k < h; k++ {
			for x := 0; x < w; x++ {
				c := index[key[(y0+k)*w+x]]
				if !inBand[c] {
					inBand[c] = true
					band = append(band, int(c))
					if bits[c] == nil {
						bits[c] = make([]byte, w)
					} else {
						clear(bits[c])
					}
				}
				bits[c][x] |= 1 << k
			}
		}
		for j, c := range band {
			inBand[c] = false
			if j > 0 {
				sb.WriteByte('$')
			}
			sb.WriteString("#" + strconv.Itoa(c))
			writeSixelRow(&sb, bits[c])
		}
		if y0+6 < h {
			sb.WriteByte('-')
		}
	}
	// A closing carriage return: harmless to a terminal, and a decoder
	// that reads a repeat up to the next byte keeps the last run.
	sb.WriteByte('$')
	return sb.String()
}

// writeSixelRow writes one colour's sixels of a band, runs of more than
// three as a repeat, without the empty tail.
func writeSixelRow(sb *strings.Builder, row []byte) {
	end := len(row)
	for end > 0 && row[end-1] == 0 {
		end--
	}
	for x := 0; x < end; {
		v := row[x]
		n := 1
		for x+n < end && row[x+n] == v {
			n++
		}
		ch := byte('?' + v)
		if n > 3 {
			sb.WriteByte('!')
			sb.WriteString(strconv.Itoa(n))
			sb.WriteByte(ch)
		} else {
			for i := 0; i < n; i++ {
				sb.WriteByte(ch)
			}
		}
		x += n
	}
}

type sixelRGB struct{ r, g, b int }

// sixelPalette buckets img's pixels at bits a channel (each pixel's bucket
// into key) and returns the 256 most common buckets' mean colours, every
// bucket's palette index (the nearest colour for the rest) and the share
// of pixels whose bucket made the palette.
func sixelPalette(img *image.RGBA, key []uint16, bits int) ([]sixelRGB, []int16, float64) {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	shift := 8 - bits
	buckets := 1 << (3 * bits)
	count := make([]uint32, buckets)
	sum := make([][3]uint32, buckets)
	for y := 0; y < h; y++ {
		row := img.Pix[img.PixOffset(b.Min.X, b.Min.Y+y):]
		for x := 0; x < w; x++ {
			p := row[4*x : 4*x+3]
			k := int(p[0]>>shift)<<(2*bits) | int(p[1]>>shift)<<bits | int(p[2]>>shift)
			key[y*w+x] = uint16(k)
			count[k]++
			sum[k][0] += uint32(p[0])
			sum[k][1] += uint32(p[1])
			sum[k][2] += uint32(p[2])
		}
	}
	var used []int
	for k, n := range count {
		if n > 0 {
			used = append(used, k)
		}
	}
	slices.SortFunc(used, func(a, c int) int { return int(count[c]) - int(count[a]) })
	pal := used[:min(len(used), 256)]
	mean := func(k int) sixelRGB {
		n := count[k]
		return sixelRGB{int(sum[k][0] / n), int(sum[k][1] / n), int(sum[k][2] / n)}
	}
	colours := make([]sixelRGB, len(pal))
	index := make([]int16, buckets)
	var covered uint32
	for i, k := range pal {
		colours[i] = mean(k)
		index[k] = int16(i)
		covered += count[k]
	}
	for _, k := range used[len(pal):] {
		c := mean(k)
		best, bestD := 0, 1<<30
		for i, p := range colours {
			dr, dg, db := c.r-p.r, c.g-p.g, c.b-p.b
			if d := dr*dr + dg*dg + db*db; d < bestD {
				best, bestD = i, d
			}
		}
		index[k] = int16(best)
	}
	return colours, index, float64(covered) / float64(w*h)
}
