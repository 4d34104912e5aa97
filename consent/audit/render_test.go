package audit

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func at(h, m, s int) time.Time { return time.Date(2026, 11, 30, h, m, s, 0, time.UTC) }

func journeyRecords() []Record {
	return []Record{
		{Time: at(9, 0, 0), Kind: KindToolCall, Conversation: "default·claude-code·4f2a", Tool: "browser_open", Origin: "https://shop.example:8443"},
		{Time: at(9, 0, 1), Kind: KindReviewShown, Conversation: "default·claude-code·4f2a", Tab: "tab-1", Gate: "navigation", Origin: "https://shop.example:8443"},
		{Time: at(9, 0, 4), Kind: KindDecision, Conversation: "default·claude-code·4f2a", Tab: "tab-1", Gate: "navigation", Decision: "approved", By: "operator", WaitMS: 2750, Origin: "https://shop.example:8443"},
		{Time: at(9, 1, 0), Kind: KindDecision, Conversation: "research-agent-with-a-very-long-token-name·opencode·99aa", Tab: "tab-2", Gate: "action", Tool: "webmcp_call_tool", Decision: "denied", Code: "user_denied", By: "operator", WaitMS: 61000, Origin: "https://xn--bcher-kva.example"},
		{Time: at(9, 2, 0), Kind: KindPolicyBlock, Conversation: "default·claude-code·4f2a", Tab: "tab-1", Code: "website_blocked", By: "policy", URL: "https://tracker.example/collect"},
	}
}

func render(t *testing.T, recs []Record, width int) []string {
	t.Helper()
	var b strings.Builder
	if err := renderTable(&b, recs, width, time.UTC); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

func TestRenderTableFullWidth(t *testing.T) {
	lines := render(t, journeyRecords()[:3], 0)
	want := []string{
		"TIME      KIND          CONVERSATION              TAB    GATE/TOOL     DECISION  BY        WAIT  ORIGIN",
		"── 2026-11-30 ──",
		"09:00:00  tool_call     default·claude-code·4f2a         browser_open                            https://shop.example:8443",
		"09:00:01  review_shown  default·claude-code·4f2a  tab-1  navigation                              https://shop.example:8443",
		"09:00:04  decision      default·claude-code·4f2a  tab-1  navigation    approved  operator  2.8s  https://shop.example:8443",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("table:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestRenderTableKeepsOrigin(t *testing.T) {
	for _, width := range []int{80, 120} {
		t.Run(fmt.Sprint(width), func(t *testing.T) { testKeepsOrigin(t, width) })
	}
}

func testKeepsOrigin(t *testing.T, width int) {
	recs := journeyRecords()
	lines := render(t, recs, width)
	t.Logf("\n%s", strings.Join(lines, "\n"))
	originAt := strings.Index(lines[0], "ORIGIN")
	if originAt < 0 {
		t.Fatalf("no ORIGIN column: %q", lines[0])
	}
	originCol := utf8.RuneCountInString(lines[0][:originAt])
	row := 0
	conv := ""
	for _, l := range lines[1:] {
		if n := utf8.RuneCountInString(l); n > width {
			t.Errorf("line is %d columns wide: %q", n, l)
		}
		if strings.HasPrefix(l, "──") {
			continue
		}
		if c, ok := strings.CutPrefix(l, "   conversation "); ok {
			conv = c
			continue
		}
		// Every row says whose it is: in its own column or under a line
		// naming the conversation.
		if !strings.Contains(lines[0], "CONVERSATION") && !strings.HasPrefix(recs[row].Conversation, strings.TrimSuffix(conv, "…")) {
			t.Errorf("row %d sits under conversation %q, want %q", row, conv, recs[row].Conversation)
		}
		want := recs[row].Origin
		if want == "" {
			want = recs[row].URL
		}
		r := []rune(l)
		if got := string(r[min(originCol, len(r)):]); got != want {
			t.Errorf("row %d origin column = %q, want %q intact and aligned", row, got, want)
		}
		if !strings.HasPrefix(l, recs[row].Time.Format("15:04:05")) {
			t.Errorf("row %d does not start with its time: %q", row, l)
		}
		row++
	}
	if row != len(recs) {
		t.Fatalf("%d rows for %d records", row, len(recs))
	}
	// What the operator needs most survives; what gave way says so.
	for _, head := range []string{"KIND", "GATE/TOOL", "DECISION"} {
		if !strings.Contains(lines[0], head) {
			t.Errorf("column %s dropped at width %d: %q", head, width, lines[0])
		}
	}
	shownRow := rowOf(t, lines, "09:00:01")
	if !strings.Contains(shownRow, "review_shown") {
		t.Errorf("kind must not be cut: %q", shownRow)
	}
	if long := rowOf(t, lines, "09:01:00"); strings.Contains(lines[0], "CONVERSATION") && (!strings.Contains(long, "…") || strings.Contains(long, "99aa")) {
		t.Errorf("long cells not truncated with …: %q", long)
	}
}

// rowOf is the table line that starts with the time hms.
func rowOf(t *testing.T, lines []string, hms string) string {
	t.Helper()
	for _, l := range lines {
		if strings.HasPrefix(l, hms) {
			return l
		}
	}
	t.Fatalf("no row at %s in\n%s", hms, strings.Join(lines, "\n"))
	return ""
}

func TestRenderTableNarrowDropsColumnsNotOrigin(t *testing.T) {
	origin := "https://a-rather-long-subdomain.of-a-long-domain.example:8443"
	recs := []Record{{Time: at(1, 2, 3), Kind: KindDecision, Conversation: "conv", Tab: "tab-1", Gate: "read", Decision: "approved", By: "operator", WaitMS: 10, Origin: origin}}
	lines := render(t, recs, 40)
	if row := rowOf(t, lines, "01:02:03"); !strings.HasSuffix(row, "  "+origin) {
		t.Fatalf("narrow table must keep time and the whole origin: %q", row)
	}
	if lines[2] != "   conversation conv" {
		t.Errorf("the dropped conversation is not named above its rows: %q", lines[2])
	}
	if strings.Contains(lines[0], "BY") {
		t.Errorf("BY should be the first column to go: %q", lines[0])
	}
}

func TestRenderTableDateLinesAndSanitizing(t *testing.T) {
	recs := []Record{
		{Time: time.Date(2026, 11, 29, 23, 59, 59, 0, time.UTC), Kind: KindSession, Note: "x"},
		{Time: time.Date(2026, 11, 30, 0, 0, 1, 0, time.UTC), Kind: KindDecision, Conversation: "evil\x1b[2J\u202e", Origin: "https://a.example"},
	}
	lines := render(t, recs, 80)
	out := strings.Join(lines, "\n")
	if !strings.Contains(out, "── 2026-11-29 ──") || !strings.Contains(out, "── 2026-11-30 ──") {
		t.Errorf("missing date lines:\n%s", out)
	}
	if strings.ContainsAny(out, "\x1b\u202e") {
		t.Errorf("control runes reached the terminal: %q", out)
	}
	if strings.Contains(lines[0], "BY") || strings.Contains(lines[0], "WAIT") {
		t.Errorf("empty columns should be hidden: %q", lines[0])
	}
}

func TestRenderTableEmpty(t *testing.T) {
	if lines := render(t, nil, 80); len(lines) != 1 || lines[0] != "no audit records" {
		t.Fatalf("empty: %q", lines)
	}
}

func TestFormatWait(t *testing.T) {
	for ms, want := range map[int64]string{0: "", 350: "350ms", 2750: "2.8s", 61000: "1m01s"} {
		if got := formatWait(ms); got != want {
			t.Errorf("formatWait(%d) = %q, want %q", ms, got, want)
		}
	}
}

// The conversation column shows the client's name on every row once any
// record carries it; a failed call shows its code; a thread or session
// grant says which grant it was; run start and stop rows say what ran.
func TestRenderTableNamesCodesGrantsRuns(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 11, 30, 9, 0, s, 0, time.UTC) }
	recs := []Record{
		{Time: at(0), Kind: KindRunStart, Note: "console test pid 7"},
		{Time: at(1), Kind: KindToolCall, Conversation: "c-9f", Tool: "browser_open", Decision: "failed", Code: "invalid_url"},
		{Time: at(2), Kind: KindDecision, Conversation: "c-9f", Client: "default·codex·9f", Tab: "tab-1", Gate: "navigation", ReviewKind: "session", Decision: "approved", By: "operator", Origin: "https://a.example"},
		{Time: at(3), Kind: KindRunStop, Note: "stopped: SIGTERM"},
	}
	lines := render(t, recs, 0)
	want := []string{
		"TIME      KIND       CONVERSATION      TAB    GATE/TOOL      DECISION            BY        ORIGIN/NOTE",
		"── 2026-11-30 ──",
		"09:00:00  run_start                                                                        console test pid 7",
		"09:00:01  tool_call  default·codex·9f         browser_open   failed invalid_url            ",
		"09:00:02  decision   default·codex·9f  tab-1  session grant  approved            operator  https://a.example",
		"09:00:03  run_stop                                                                         stopped: SIGTERM",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("table:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// A run's or session's note shares the origin column; a long one is cut
// at the terminal's width instead of pushing the other columns away (a
// newcomer's 120-column table once showed only TIME KIND DECISION ORIGIN).
func TestRenderTableLongNoteDoesNotCrowdOutColumns(t *testing.T) {
	origin := "http://127.0.0.1:8080"
	recs := []Record{
		{Time: at(1, 2, 3), Kind: KindRunStart, Conversation: "builtin", Note: "task: " + strings.Repeat("find the cheapest lamp and put it in the cart ", 6)},
		{Time: at(1, 2, 4), Kind: KindDecision, Conversation: "builtin", Tab: "tab-1", Gate: "navigation", Decision: "approved", By: "ana", WaitMS: 900, Origin: origin},
	}
	lines := render(t, recs, 120)
	for _, head := range []string{"KIND", "CONVERSATION", "DECISION", "BY"} {
		if !strings.Contains(lines[0], head) {
			t.Errorf("column %s dropped at 120 for a long note: %q", head, lines[0])
		}
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 120 {
			t.Errorf("line is %d columns wide: %q", n, l)
		}
	}
	if !strings.HasSuffix(lines[len(lines)-1], origin) {
		t.Errorf("the origin is not whole: %q", lines[len(lines)-1])
	}
	if !strings.Contains(lines[2], "…") {
		t.Errorf("the long note is not marked cut: %q", lines[2])
	}
}
