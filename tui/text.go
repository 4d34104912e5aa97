package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/charmbracelet/x/ansi"
)

// clean makes site-derived text safe for the terminal: control characters
// (ESC included, so no escape sequence survives) and bidirectional
// overrides (which could visually reorder an origin) become U+FFFD; tabs
// and newlines become spaces for one-line fields.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case isUnsafeRune(r):
			return '\uFFFD'
		}
		return r
	}, s)
}

// cleanBlock is clean for multi-line text: newlines survive.
func cleanBlock(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n':
			return r
		case r == '\t':
			return ' '
		case isUnsafeRune(r):
			return '\uFFFD'
		}
		return r
	}, s)
}

func isUnsafeRune(r rune) bool {
	if unicode.IsControl(r) {
		return true
	}
	switch {
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
		return true
	}
	return false
}

// width is the display width of s in cells.
func width(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return ansi.StringWidth(s)
		}
	}
	return len(s) // printable ASCII: one cell a byte, and most lines are
}

// trunc cuts s to at most w cells, marking the cut with "…".
func trunc(s string, w int) string {
	if w <= 0 {
		return ""
	}
	// No character is wider in cells than it is long in bytes (escape
	// sequences take none), so a string of at most w bytes already fits;
	// every frame truncates every line, and most fit.
	if len(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// markCut ends line with "…" to say that more follows, in at most w cells.
// If the mark does not fit beside the line, whole words are dropped from
// its end to make room: a word is never cut, and the line never ends in
// two marks.
func markCut(line string, w int) string {
	line = strings.TrimRight(line, " ")
	for width(line)+1 > w {
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.TrimSpace(line[:i]) == "" {
			return trunc(line, w) // one word wider than the line: the cut is marked once
		}
		line = strings.TrimRight(line[:i], " ")
	}
	return line + "…"
}

// firstFit is the first of forms (longest first, each made of whole
// parts) that fits w cells; the last, cut, when none does.
func firstFit(w int, forms ...string) string {
	for _, f := range forms {
		if width(f) <= w {
			return f
		}
	}
	return trunc(forms[len(forms)-1], w)
}

// padRight pads s with spaces to exactly w cells (truncating if longer).
func padRight(s string, w int) string {
	s = trunc(s, w)
	if n := w - width(s); n > 0 {
		s += strings.Repeat(" ", n)
	}
	return s
}

// wrap word-wraps s to w cells, breaking only at spaces: a hyphen stays
// inside its word, so "demo-password" or an origin such as
// "eu-west-3.example" is never split where a reader would take the line end
// for part of the value. It is the one wrapper for prose and for verbatim
// text alike, so spacing inside a line survives: leading indentation (a
// JSON result's nesting) and runs of spaces between words (text to enter)
// are kept; only the spaces at a break are dropped. A word wider than w is
// hard-broken. Empty input is one empty line.
func wrap(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	var out []string
	line, lw := "", 0
	gap := "" // spaces seen since the last word, placed only if a word follows on this line
	flush := func() {
		out = append(out, line)
		line, lw = "", 0
	}
	for len(s) > 0 {
		if s[0] == ' ' {
			n := len(s) - len(strings.TrimLeft(s, " "))
			gap, s = s[:n], s[n:]
			continue
		}
		n := strings.IndexByte(s, ' ')
		if n < 0 {
			n = len(s)
		}
		word := s[:n]
		s = s[n:]
		ww := width(word)
		if lw+len(gap)+ww <= w {
			// Same line; on the first line gap is the leading indentation.
			line, lw = line+gap+word, lw+len(gap)+ww
			gap = ""
			continue
		}
		gap = ""
		if lw > 0 {
			flush()
		}
		if ww <= w {
			line, lw = word, ww
			continue
		}
		parts := strings.Split(ansi.Hardwrap(word, w, false), "\n")
		out = append(out, parts[:len(parts)-1]...)
		line = parts[len(parts)-1]
		lw = width(line)
	}
	if lw > 0 || len(out) == 0 {
		flush()
	}
	return out
}

// humanBytes renders n as "1.2 MiB (1,258,291 bytes)".
// Below 1 KiB it is just "32 bytes".
func humanBytes(n int64) string {
	switch {
	case n == 1:
		return "1 byte"
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%s (%s bytes)", shortBytes(n), groupDigits(n))
}

func shortBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func groupDigits(n int64) string {
	s := fmt.Sprintf("%d", n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// remaining renders the time left before deadline, rounded up to whole
// seconds so "0s" only shows once the review has actually expired.
func remaining(deadline, now time.Time) string {
	if deadline.IsZero() {
		return "waiting to be shown"
	}
	d := deadline.Sub(now)
	if d <= 0 {
		return "expired"
	}
	secs := int((d + time.Second - 1) / time.Second)
	if secs >= 60 {
		return fmt.Sprintf("%dm%02ds left", secs/60, secs%60)
	}
	return fmt.Sprintf("%ds left", secs)
}

// block joins lines into exactly h lines of at most w cells: the shape every
// component's Render returns.
func block(lines []string, w, h int) string {
	return strings.Join(fitLines(lines, w, h), "\n")
}

// fitLines cuts or pads a block to exactly h lines, each cut to w cells.
func fitLines(lines []string, w, h int) []string {
	out := make([]string, 0, h)
	for i := 0; i < h; i++ {
		if i < len(lines) {
			out = append(out, trunc(lines[i], w))
		} else {
			out = append(out, "")
		}
	}
	return out
}

// rule draws a section heading "── title ───…" exactly w cells wide.
func rule(title string, w int, ch string) string {
	if w <= 0 {
		return ""
	}
	head := ch + ch + " "
	if title == "" {
		return strings.Repeat(ch, w)
	}
	s := head + trunc(title, max(0, w-len([]rune(head))-1)) + " "
	if n := w - width(s); n > 0 {
		s += strings.Repeat(ch, n)
	}
	return trunc(s, w)
}

func splitLines(s string) []string { return strings.Split(s, "\n") }

// countOf is "1 tab", "2 tabs": no "(s)" on the screen.
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if len(noun) > 1 && noun[len(noun)-1] == 'y' && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])) {
		return strconv.Itoa(n) + " " + strings.TrimSuffix(noun, "y") + "ies"
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// cleanNames is clean applied to each name.
func cleanNames(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = clean(n)
	}
	return out
}
