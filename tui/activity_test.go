package tui

import (
	tea "charm.land/bubbletea/v2"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/tabwarden/tabwarden/consent"
)

// narration is the kind of entry the demo agent writes: an instruction the
// operator must read to the end (the credentials are at the end).
const narration = `demo: you have the browser: in the Chromium window sign in with user name "demo" and password "demo-password" (leave One-time code empty), then press r here`

var entryStart = regexp.MustCompile(`^\d\d:\d\d:\d\d [ !] `)

func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// activitySection is the screen's lines from the Activity rule down to the
// footer, ANSI stripped.
func activitySection(t *testing.T, scr string) []string {
	t.Helper()
	lines := strings.Split(scr, "\n")
	for i, l := range lines {
		if strings.Contains(l, "── Activity ") {
			return lines[i+1 : len(lines)-2]
		}
	}
	t.Fatalf("no activity section on screen:\n%s", scr)
	return nil
}

// TestActivityShowsLongEntriesWhole: at the sizes a newcomer runs the demo
// in, a long narration is on screen word for word, on continuation lines
// rather than cut.
func TestActivityShowsLongEntriesWhole(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 40}, {160, 48}} {
		s := baseState()
		s.Activity = append(s.Activity, consent.Activity{Time: fixedNow, Conversation: "c1a2", Text: narration})
		m, _ := newTestModel(s, size[0], size[1])
		sec := activitySection(t, screen(m))
		got := squash(strings.Join(sec, "\n"))
		if !strings.Contains(got, squash(narration)) {
			t.Errorf("%dx%d: the narration is not on screen whole:\n%s", size[0], size[1], strings.Join(sec, "\n"))
		}
		if strings.Contains(got, "…") {
			t.Errorf("%dx%d: an activity entry is cut:\n%s", size[0], size[1], strings.Join(sec, "\n"))
		}
	}
}

func longLog(n int) consent.State {
	s := baseState()
	s.Activity = nil
	for i := range n {
		s.Activity = append(s.Activity, consent.Activity{
			Time: fixedNow.Add(time.Duration(i) * time.Second), Conversation: "c1a2",
			Text: strings.Repeat("word ", 20+i) + "end",
		})
	}
	return s
}

// TestActivityOlderEntriesWholeOrTheirEnd: every entry on screen is whole
// except the oldest shown, which may show only its end, marked "…" so it
// is not read as an entry of its own; the newest entry is last.
func TestActivityOlderEntriesWholeOrTheirEnd(t *testing.T) {
	s := longLog(6)
	continued := strings.Repeat(" ", activityIndent-1) + "…"
	for h := 2; h <= 12; h++ {
		lines := activityLog{s: s}.lines(60, h)
		if len(lines) != h {
			t.Fatalf("h=%d: %d lines, want the section full", h, len(lines))
		}
		body := lines[1:]
		for i, l := range body {
			l = ansi.Strip(l)
			switch {
			case entryStart.MatchString(l):
			case i == 0 && strings.HasPrefix(l, continued):
			case i > 0 && strings.HasPrefix(l, strings.Repeat(" ", activityIndent)):
			default:
				t.Errorf("h=%d line %d is neither an entry, its continuation nor a marked end: %q", h, i, l)
			}
			if width(l) > 60 {
				t.Errorf("h=%d: line wider than 60: %q", h, l)
			}
		}
		if last := body[len(body)-1]; !strings.HasSuffix(last, "end") && !strings.HasSuffix(last, "…") {
			t.Errorf("h=%d: the newest entry is not last:\n%s", h, strings.Join(lines, "\n"))
		}
	}
}

// TestActivityNewestNeverDropped: when the newest entry alone is taller
// than the section, its beginning is shown and the cut is marked.
func TestActivityNewestNeverDropped(t *testing.T) {
	s := longLog(3)
	lines := activityLog{s: s}.lines(40, 3)
	if len(lines) != 3 {
		t.Fatalf("want the rule and 2 lines, got %d:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if !entryStart.MatchString(lines[1]) || !strings.Contains(lines[1], "00:02") {
		t.Errorf("want the newest entry's first line, got %q", lines[1])
	}
	if !strings.HasSuffix(lines[2], "…") {
		t.Errorf("want the cut marked, got %q", lines[2])
	}
}

// TestActivityNarrowCutsToOneLine: too narrow to wrap usefully, each entry
// keeps to one line.
func TestActivityNarrowCutsToOneLine(t *testing.T) {
	s := longLog(3)
	lines := activityLog{s: s}.lines(25, 10)
	if len(lines) != 4 {
		t.Fatalf("want the rule and one line per entry, got:\n%s", strings.Join(lines, "\n"))
	}
}

// TestActivityDesiredCountsWrappedLines: the layout's room request is
// what the log draws at the width it is asked for: continuation lines at
// 80 columns are counted, and a wider screen is not charged for them.
func TestActivityDesiredCountsWrappedLines(t *testing.T) {
	s := baseState()
	s.Activity = []consent.Activity{{Time: fixedNow, Conversation: "c1a2", Text: narration}}
	a := activityLog{s: s}
	for _, w := range []int{80, 120, 200} {
		if got, want := a.section(w, 100).desired, len(a.lines(w, 100)); got != want {
			t.Errorf("desired(%d) = %d, the log draws %d lines at %d columns", w, got, want, w)
		}
	}
	if a.section(200, 100).desired >= a.section(80, 100).desired {
		t.Errorf("desired(200) = %d, not less than desired(80) = %d: the width is ignored", a.section(200, 100).desired, a.section(80, 100).desired)
	}
}

// TestWrapKeepsHyphenatedWords: a credential or an origin with
// hyphens moves to the next line whole; only a word wider than the line is
// broken, and no line is wider than asked.
func TestWrapKeepsHyphenatedWords(t *testing.T) {
	got := wrap(`password "demo-password" at eu-west-3.example`, 22)
	want := []string{`password`, `"demo-password" at`, `eu-west-3.example`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrap = %q, want %q", got, want)
	}
	long := strings.Repeat("x", 25)
	got = wrap("a "+long+" b", 10)
	if strings.Join(got, "|") != "a|xxxxxxxxxx|xxxxxxxxxx|xxxxx b" {
		t.Errorf("a long word: %q", got)
	}
	for _, l := range got {
		if width(l) > 10 {
			t.Errorf("line %q wider than 10", l)
		}
	}
	if got := wrap("", 10); len(got) != 1 || got[0] != "" {
		t.Errorf("empty text: %q", got)
	}
}

// TestActivityNewestOnLastLine: once older entries scroll away, the
// newest entry ends on the section's last line rather than above blank
// ones.
func TestActivityNewestOnLastLine(t *testing.T) {
	s := longLog(6)
	for h := 3; h <= 12; h++ {
		lines := activityLog{s: s}.lines(60, h)
		if len(lines) != h {
			t.Errorf("h=%d: %d lines, want the section full:\n%s", h, len(lines), strings.Join(lines, "\n"))
			continue
		}
		if last := lines[h-1]; !strings.HasSuffix(last, "end") && !strings.HasSuffix(last, "…") {
			t.Errorf("h=%d: the last line is not the newest entry's end: %q", h, last)
		}
	}
}

// TestActivityCutMarkedOnceBetweenWords: when the newest entry is cut, its
// last shown line ends in one "…" after a whole word, whatever width the
// wrapped line already had (the grants line once read "reading ……").
func TestActivityCutMarkedOnceBetweenWords(t *testing.T) {
	s := baseState()
	s.Activity = []consent.Activity{{Time: fixedNow, Conversation: "c1a2",
		Text: "grant gb707a4-28 by local: reading on http://127.0.0.1:44119 for 10 minutes and then some more words to wrap"}}
	for w := activityIndent + activityMinText; w <= 70; w++ {
		lines := activityLog{s: s}.lines(w, 2)
		last := ansi.Strip(lines[len(lines)-1])
		if strings.Contains(last, "……") || !strings.HasSuffix(last, "…") || width(last) > w {
			t.Fatalf("w=%d: want one cut mark within the width, got %q", w, last)
		}
		words := strings.Fields(s.Activity[0].Text)
		_, text, _ := strings.Cut(strings.TrimSuffix(last, "…"), ": ") // after the time and the conversation
		for _, wd := range strings.Fields(text) {
			if !slices.Contains(words, wd) {
				t.Fatalf("w=%d: word %q is cut in %q", w, wd, last)
			}
		}
	}
}

// TestInventoryOneMoreRowSingular: a list cut by one row says "1 more row"
// (it once said "1 more rows"); heights are tried until one cuts one row.
func TestInventoryOneMoreRowSingular(t *testing.T) {
	marker := regexp.MustCompile(`· (\d+) (more rows?), ↑↓`)
	sawOne := false
	for h := 20; h <= 60; h++ {
		m := marker.FindStringSubmatch(plain(renderState(overflowState(), 80, h)))
		if m == nil {
			continue
		}
		want := "more rows"
		if m[1] == "1" {
			want, sawOne = "more row", true
		}
		if m[2] != want {
			t.Fatalf("80x%d: %q", h, m[0])
		}
	}
	if !sawOne {
		t.Fatal("no height cut the list by exactly one row")
	}
}

// TestTokenHostMenuWrapsBetweenEntries: the `n` panel's host menu breaks
// between "N host" entries, never inside one (the walk saw "5" / "cursor").
func TestTokenHostMenuWrapsBetweenEntries(t *testing.T) {
	hosts := []string{"claude-code", "codex", "opencode", "gemini-cli", "cursor", "vscode"}
	for w := 30; w <= 120; w++ {
		lines := tokenBox{p: tokenPanel{names: []string{"default"}, hosts: hosts}}.lines(w)
		menu := strings.Join(lines[2:], "\n")
		for i, h := range hosts {
			if !strings.Contains(menu, fmt.Sprintf("%d %s", i+1, h)) {
				t.Fatalf("w=%d: entry %d %s is split:\n%s", w, i+1, h, menu)
			}
		}
		for _, l := range lines {
			if width(l) > w {
				t.Fatalf("w=%d: %q is wider", w, l)
			}
		}
	}
}

// TestActivityOneLineLeftCountsWhatIsAbove: when one line is left for an
// older entry, a fragment of its end ("…appeared") says nothing; the line
// says how many entries are above instead.
func TestActivityOneLineLeftCountsWhatIsAbove(t *testing.T) {
	s := baseState()
	s.Activity = []consent.Activity{
		{Time: fixedNow, Conversation: "c1a2", Text: "first " + strings.Repeat("older ", 30) + "appeared"},
		{Time: fixedNow.Add(time.Second), Conversation: "c1a2", Text: "second " + strings.Repeat("older ", 30) + "appeared"},
		{Time: fixedNow.Add(2 * time.Second), Conversation: "c1a2", Text: "newest"},
	}
	lines := activityLog{s: s}.lines(60, 3)
	got := ansi.Strip(lines[1])
	if strings.Contains(got, "appeared") || !strings.Contains(got, "… 2 earlier entries above") {
		t.Errorf("the line above the newest entry is %q, want a count of the 2 entries above", got)
	}
	if !strings.HasSuffix(lines[2], "newest") {
		t.Errorf("the newest entry is not last: %q", lines[2])
	}
	if got := ansi.Strip(activityLog{s: s}.lines(60, 4)[2]); !strings.Contains(got, "appeared") {
		t.Errorf("with two lines of room the older entry's end is not shown: %q", got)
	}
}

// TestMintedConfigCutSaysWhereAWholeCopyIs: a configuration cut into rows
// pastes with line breaks inside the token, so the panel says where a whole
// copy is; one that fits says nothing extra, and every character is shown.
func TestMintedConfigCutSaysWhereAWholeCopyIs(t *testing.T) {
	const token = "tw_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"
	config := "# in ~/.codex/config.toml:\n[mcp_servers.tabwarden]\nurl = \"http://127.0.0.1:8765/mcp\"\nhttp_headers = { Authorization = \"Bearer " + token + "\" }"
	p := tokenPanel{names: []string{"codex"}, hosts: []string{"codex"}, minted: &MintedToken{Name: "codex", Where: "Codex (http)", Config: config}, mintedFor: "codex"}
	narrow := strings.Join(tokenBox{p: p}.lines(60), "\n")
	if !strings.Contains(squash(narrow), "`tabwarden connect codex` in a shell prints a new token's configuration whole") {
		t.Errorf("a cut configuration does not say where a whole copy is:\n%s", narrow)
	}
	if !strings.Contains(strings.ReplaceAll(narrow, "\n", ""), token) {
		t.Errorf("the token lost characters:\n%s", narrow)
	}
	if wide := strings.Join(tokenBox{p: p}.lines(120), "\n"); strings.Contains(wide, "split across rows") || !strings.Contains(wide, token) {
		t.Errorf("a configuration that fits is not shown plainly:\n%s", wide)
	}
}

// A minted configuration takes the whole token panel, so 80×24 shows it to
// its last line (the walk saw it cut before the token); esc goes back to
// the list, a second esc closes the panel.
func TestMintedConfigShowsWholeAt80x24(t *testing.T) {
	m, r := minted(t, 80, 24, []string{"default", "codex", "gemini-cli"}, false, "n", "1")
	s := screen(m)
	if !strings.Contains(strings.ReplaceAll(s, "\n", ""), "tw_test-secret-that-is-long-enough-to-pass-the-edge") {
		t.Errorf("the minted configuration is cut before its token:\n%s", s)
	}
	if strings.Contains(s, "new token for:") {
		t.Errorf("the host menu still takes room beside the configuration:\n%s", s)
	}
	m = r.update(m, press("esc"))
	if s := screen(m); !strings.Contains(s, "new token for:") || strings.Contains(s, "tw_test-secret") {
		t.Errorf("esc did not go back to the list:\n%s", s)
	}
	m = r.update(m, press("esc"))
	if s := screen(m); strings.Contains(s, "Agent tokens") {
		t.Errorf("a second esc did not close the panel:\n%s", s)
	}
}

// At 120 columns a configuration too wide for the review column takes the
// whole width, where its token line fits uncut (the walk saw the bearer
// token split over two rows at 120x40).
func TestMintedConfigTakesTheWidthItNeeds(t *testing.T) {
	m, _ := minted(t, 160, 40, nil, false, "n", "1")
	s := screen(m)
	if !strings.Contains(s, "--header 'Authorization: Bearer tw_test-secret-that-is-long-enough-to-pass-the-edge'") {
		t.Errorf("the token line is cut at 160 columns:\n%s", s)
	}
	if strings.Contains(s, "split across rows") {
		t.Errorf("a configuration that fits the screen says it is cut:\n%s", s)
	}
}

// With the page view beside the rest (120 columns and up), a minted
// configuration the rest would cut has the screen: the view steps aside
// until esc (the walk saw the token split in the 60-column rest).
func TestPageViewStepsAsideForAMintedConfig(t *testing.T) {
	m, r := minted(t, 160, 40, nil, true, "v", "n", "1")
	s := screen(m)
	if !strings.Contains(s, "Bearer tw_test-secret-that-is-long-enough-to-pass-the-edge'") || strings.Contains(s, "Page view") {
		t.Errorf("the page view kept its side and cut the configuration:\n%s", s)
	}
	m = r.update(m, press("esc"))
	if s := screen(m); !strings.Contains(s, "Page view") {
		t.Errorf("esc did not bring the page view back:\n%s", s)
	}
}

// A configuration cut for room scrolls with ↑↓, so its last line (the
// closing brace of a JSON configuration) can be read and copied off an
// 80×24 screen; the hint says which lines show (the walk saw a cut JSON
// with no way to reach its end).
func TestMintedConfigScrolls(t *testing.T) {
	config := "{\n  \"mcp\": {\n    \"tabwarden\": {\n      \"type\": \"remote\",\n      \"url\": \"http://127.0.0.1:8765/mcp\",\n      \"headers\": {\n        \"Authorization\": \"Bearer tw_x\"\n      }\n    }\n  }\n}"
	p := tokenPanel{minted: &MintedToken{Name: "opencode", Where: "opencode.json", Config: config}, mintedFor: "opencode"}
	b := tokenBox{p: p, st: defaultStyles()}
	top := ansi.Strip(b.Render(60, 6))
	if !strings.Contains(top, "lines 1-4 of 11 · ↑↓ scroll") || strings.Contains(top, "Bearer") {
		t.Fatalf("a cut configuration at its top:\n%s", top)
	}
	b.p.scroll = 100 // more ↓ than rows: the end shows, no blank room
	end := ansi.Strip(b.Render(60, 6))
	if !strings.Contains(end, "lines 8-11 of 11") || !strings.HasSuffix(strings.TrimRight(strings.Split(end, "\n")[4], " "), "}") {
		t.Fatalf("scrolled to the end:\n%s", end)
	}
	b.p.scroll = 3
	if mid := ansi.Strip(b.Render(60, 6)); !strings.Contains(mid, "lines 4-7 of 11") {
		t.Fatalf("scrolled by 3:\n%s", mid)
	}
	// ↓ on a minted configuration scrolls it; it no longer goes back to
	// the list (esc does).
	m, r := minted(t, 80, 24, nil, false, "n", "1")
	// ↑↓ are the panel's now: a cut conversation list does not offer them.
	if s := screen(m); strings.Contains(s, "more rows, ↑↓") || strings.Contains(s, "more row, ↑↓") {
		t.Errorf("two hints claim ↑↓:\n%s", s)
	}
	m = r.update(m, press("down"))
	if m.tokens == nil || m.tokens.minted == nil || m.tokens.scroll != 1 || !strings.Contains(screen(m), "Token claude-code") {
		t.Errorf("↓ left the minted configuration:\n%s", screen(m))
	}
}

// X in the token panel never revokes the default token, which mcp.json,
// the header and mcp-stdio name; it revokes a minted one.
func TestTokenPanelKeepsTheDefaultToken(t *testing.T) {
	m, r := minted(t, 80, 24, []string{"default", "codex"}, false, "n", "X")
	minter := m.opts.Minter.(*fakeMinter)
	if !slices.Contains(minter.names, "default") || !strings.Contains(squash(screen(m)), "a restart renews it") {
		t.Errorf("X on the default token: tokens %v\n%s", minter.names, screen(m))
	}
	m = r.update(m, press("down"))
	m = r.update(m, press("X"))
	r.update(m, press("y"))
	if slices.Contains(minter.names, "codex") {
		t.Errorf("X on a minted token did not revoke it: %v", minter.names)
	}
}

// A token panel cut for room says how much is hidden instead of ending
// mid-list (the walk saw only "▸ claude-code" at 80x24).
func TestTokenPanelCutSaysSo(t *testing.T) {
	b := tokenBox{p: tokenPanel{names: []string{"default", "codex", "gemini-cli"}, hosts: []string{"claude-code", "codex"}}, st: defaultStyles()}
	got := ansi.Strip(b.Render(60, 3))
	if !strings.Contains(got, "more lines") || strings.Contains(got, "page view") {
		t.Errorf("a cut token panel does not say so, or names a page view that is not open:\n%s", got)
	}
	b.pageOn = true
	if got := ansi.Strip(b.Render(60, 3)); !strings.Contains(got, "v hides the page view") {
		t.Errorf("a cut token panel beside the page view does not say v gives room:\n%s", got)
	}
	b.pageOn = false
	if whole := ansi.Strip(b.Render(60, 20)); strings.Contains(whole, "more line") {
		t.Errorf("a whole token panel says it is cut:\n%s", whole)
	}
}

// minted is a screen of w×h that pressed keys (v, n, 1, …) with a fake
// minter holding names and, when page, a fake page view.
func minted(t *testing.T, w, h int, names []string, page bool, keys ...string) (Model, *runner) {
	t.Helper()
	opts := Options{Version: "v0.1.0", Now: fixedClock, Minter: &fakeMinter{names: names}}
	if page {
		opts.Page = newFakePage()
	}
	m := New(newFake(baseState()), opts)
	t.Cleanup(m.Close)
	r := newRunner()
	m = r.update(m, tea.WindowSizeMsg{Width: w, Height: h})
	for _, k := range keys {
		m = r.update(m, press(k))
	}
	return m, r
}
