package audit

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

const colGap = "  "

// column is one column of the table. min is how narrow truncation may make
// it; drop orders which columns go first when even the minimums do not fit
// (0 = never dropped).
type column struct {
	head string
	min  int
	drop int
	cell func(Record, *time.Location) string
}

var columns = []column{
	{head: "TIME", min: 8, cell: func(r Record, loc *time.Location) string {
		return r.Time.In(loc).Format("15:04:05")
	}},
	// Every kind fits in 12, and a cut kind is hard to read.
	{head: "KIND", min: 12, drop: 6, cell: func(r Record, _ *time.Location) string { return string(r.Kind) }},
	{head: "CONVERSATION", min: 10, drop: 3, cell: func(r Record, _ *time.Location) string { return r.Conversation }},
	{head: "TAB", min: 5, drop: 2, cell: func(r Record, _ *time.Location) string { return r.Tab }},
	{head: "GATE/TOOL", min: 10, drop: 5, cell: func(r Record, _ *time.Location) string {
		// A thread or session grant is asked at one gate but covers many:
		// say which grant it was, not just the gate that asked.
		gate := r.Gate
		if r.ReviewKind == "thread" || r.ReviewKind == "session" {
			gate = r.ReviewKind + " grant"
		}
		if r.Grant != "" {
			gate = joinSet(" ", gate, "grant "+r.Grant)
		}
		return joinSet("/", gate, r.Tool, r.Action)
	}},
	// A decision's code (user_denied for denied, …) says nothing more; a
	// failed tool call or a policy block has only a code.
	{head: "DECISION", min: 8, drop: 7, cell: func(r Record, _ *time.Location) string {
		switch {
		case r.Decision == "failed" && r.Code != "":
			return "failed " + r.Code
		case r.Decision != "":
			return r.Decision
		}
		return r.Code
	}},
	// BY names the operator (local, or an SSH operator's key comment) when
	// one decided; KEY is that operator's key fingerprint. KEY goes first
	// when the table is too wide (--json keeps it); BY outlives the
	// conversation, since "who decided" is what a team reads the table for.
	{head: "BY", min: 6, drop: 4, cell: func(r Record, _ *time.Location) string {
		if r.Operator != "" {
			return r.Operator
		}
		return r.By
	}},
	{head: "KEY", min: 8, drop: -1, cell: func(r Record, _ *time.Location) string { return r.KeyFingerprint }},
	{head: "WAIT", min: 5, drop: 1, cell: func(r Record, _ *time.Location) string { return formatWait(r.WaitMS) }},
	// ORIGIN is last and never cut: it is what the operator checks a
	// decision against. A policy block has a URL instead.
	{head: "ORIGIN", cell: func(r Record, _ *time.Location) string {
		switch {
		case r.Origin != "":
			return r.Origin
		case r.URL != "":
			return r.URL
		case r.Kind == KindRunStart || r.Kind == KindRunStop || r.Kind == KindSession || r.Kind == KindRevoke || r.Kind == KindMint:
			// These rows are about no origin; their note says what ran or ended.
			return r.Note
		}
		return ""
	}},
}

const (
	timeCol   = 0
	convCol   = 2
	originCol = 9
)

// RenderTable prints recs as an aligned table for `tabwarden audit`, one
// row per record in the given order, with a date line whenever the local
// date changes (the time column is local HH:MM:SS). Columns no record fills
// are left out. The table fits width columns (width <= 0: no limit): the
// least useful columns are dropped first (key, wait, tab, conversation,
// by, …)
// until the rest fit legibly, then the widest are truncated with "…". The
// time and the origin are never cut, so a row is wider than width only when
// its origin alone does not fit. Control and other invisible runes in the
// log are shown as U+FFFD so a crafted log cannot rewrite the terminal.
func RenderTable(w io.Writer, recs []Record, width int) error {
	return renderTable(w, recs, width, time.Local)
}

func renderTable(w io.Writer, recs []Record, width int, loc *time.Location) error {
	if len(recs) == 0 {
		_, err := io.WriteString(w, "no audit records\n")
		return err
	}
	recs = withClientNames(recs)
	cells := make([][]string, len(recs))
	widths := make([]int, len(columns))
	for i, r := range recs {
		cells[i] = make([]string, len(columns))
		for c, col := range columns {
			s := printable(col.cell(r, loc))
			cells[i][c] = s
			widths[c] = max(widths[c], utf8.RuneCountInString(s))
		}
	}
	notes := slices.ContainsFunc(recs, func(r Record) bool { return r.Origin == "" && r.URL == "" && columns[originCol].cell(r, loc) != "" })
	head := func(c int) string {
		if c == originCol && notes {
			return "ORIGIN/NOTE" // run and session rows say what ran or ended there
		}
		return columns[c].head
	}
	var shown []int
	for c := range columns {
		if widths[c] == 0 && c != timeCol && c != originCol {
			continue // a column nobody filled in only costs width
		}
		widths[c] = max(widths[c], utf8.RuneCountInString(head(c)))
		shown = append(shown, c)
	}
	if width > 0 {
		// The origin column is never cut where it holds an origin or a
		// URL; a session or run row's note there may be, or one long note
		// would push every other column off a terminal's table.
		originFloor := utf8.RuneCountInString(head(originCol))
		for i, r := range recs {
			if r.Origin != "" || r.URL != "" {
				originFloor = max(originFloor, utf8.RuneCountInString(cells[i][originCol]))
			}
		}
		shown = fit(shown, widths, width, originFloor)
	}

	// A narrow terminal drops the conversation column; a line whenever the
	// conversation changes keeps every row attributable at no width.
	convLines := !slices.Contains(shown, convCol) && slices.ContainsFunc(recs, func(r Record) bool { return r.Conversation != "" })

	var b strings.Builder
	writeRow := func(cell func(c int) string) {
		for i, c := range shown {
			s := truncate(cell(c), widths[c])
			if i == len(shown)-1 {
				b.WriteString(s)
				break
			}
			b.WriteString(s)
			b.WriteString(strings.Repeat(" ", widths[c]-utf8.RuneCountInString(s)))
			b.WriteString(colGap)
		}
		b.WriteByte('\n')
	}
	writeRow(head)
	day, conv := "", "\x00"
	for i, r := range recs {
		if d := r.Time.In(loc).Format(dayLayout); d != day {
			day = d
			fmt.Fprintf(&b, "── %s ──\n", d)
			conv = "\x00"
		}
		if convLines && r.Conversation != conv {
			conv = r.Conversation
			if conv == "" {
				b.WriteString("   (no conversation)\n")
			} else {
				line := "   conversation " + printable(conv)
				if width > 0 {
					line = truncate(line, width)
				}
				b.WriteString(line + "\n")
			}
		}
		writeRow(func(c int) string { return cells[i][c] })
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// withClientNames shows each conversation by its display name, learned from
// any record that carries it (the session start, the engine's own records),
// so rows written before or after the name was known read the same.
func withClientNames(recs []Record) []Record {
	names := map[string]string{}
	for _, r := range recs {
		if r.Conversation != "" && r.Client != "" {
			names[r.Conversation] = r.Client
		}
	}
	if len(names) == 0 {
		return recs
	}
	out := make([]Record, len(recs))
	for i, r := range recs {
		if n := names[r.Conversation]; n != "" {
			r.Conversation = n
		}
		out[i] = r
	}
	return out
}

// fit chooses the columns to show and their widths so a row fits width.
// Columns are dropped first (least useful first) until the survivors fit
// at their minimum widths — many legible columns beat many unreadable ones —
// then the widest survivors are narrowed until the row fits. Time is
// neither dropped nor narrowed, nor is the origin column below its widest
// origin or URL (originFloor): only a note sharing it is cut.
func fit(shown []int, widths []int, width, originFloor int) []int {
	rowWidth := func(w func(c int) int) int {
		t := len(colGap) * (len(shown) - 1)
		for _, c := range shown {
			t += w(c)
		}
		return t
	}
	floor := func(c int) int {
		if c == originCol {
			return min(widths[c], originFloor)
		}
		if c == timeCol {
			return widths[c]
		}
		return min(widths[c], columns[c].min)
	}
	for rowWidth(floor) > width {
		victim := -1
		for i, c := range shown {
			if columns[c].drop != 0 && (victim < 0 || columns[c].drop < columns[shown[victim]].drop) {
				victim = i
			}
		}
		if victim < 0 {
			break // only time and origin left; the origin stays whole
		}
		shown = slices.Delete(shown, victim, victim+1)
	}
	for rowWidth(func(c int) int { return widths[c] }) > width {
		widest := -1
		for _, c := range shown {
			if widths[c] > floor(c) && (widest < 0 || widths[c] > widths[widest]) {
				widest = c
			}
		}
		if widest < 0 {
			break
		}
		widths[widest]--
	}
	return shown
}

func truncate(s string, w int) string {
	if utf8.RuneCountInString(s) <= w {
		return s
	}
	if w <= 0 {
		return ""
	}
	r := []rune(s)
	return string(r[:w-1]) + "…"
}

func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

func joinSet(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

func formatWait(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case ms <= 0:
		return ""
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
}
