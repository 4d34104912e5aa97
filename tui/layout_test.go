package tui

import (
	tea "charm.land/bubbletea/v2"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/tabwarden/tabwarden/consent"
)

// screenLines is the rendered screen as plain lines.
func screenLines(s consent.State, w, h int) []string {
	return strings.Split(strings.TrimSuffix(plain(renderState(s, w, h)), "\n"), "\n")
}

// manyEntries is s with n activity entries, the last one the demo's
// narration, so the log always has more to show than fits.
func manyEntries(s consent.State, n int) consent.State {
	s.Activity = nil
	for i := range n - 1 {
		s.Activity = append(s.Activity, consent.Activity{Time: fixedNow.Add(time.Duration(i-n) * time.Second), Conversation: "c1a2", Text: fmt.Sprintf("entry %d", i)})
	}
	s.Activity = append(s.Activity, consent.Activity{Time: fixedNow, Conversation: "c1a2", Text: narration})
	return s
}

func indexOf(lines []string, prefix string) int {
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}

// TestLayoutWideLogTakesUnusedLines: at 120×40 a short review leaves the
// review column mostly empty; with more activity than fits, the log takes
// those lines instead of stopping at a quarter of the screen. No line
// between the columns' end and the log is left blank on both sides.
func TestLayoutWideLogTakesUnusedLines(t *testing.T) {
	s := manyEntries(panelCases()["read"], 60)
	lines := screenLines(s, 120, 40)
	act := indexOf(lines, "── Activity")
	if act < 0 {
		t.Fatalf("no activity section:\n%s", strings.Join(lines, "\n"))
	}
	for i := 2; i < act; i++ {
		left, right, ok := strings.Cut(lines[i], "│")
		if ok && strings.TrimSpace(left) == "" && strings.TrimSpace(right) == "" {
			t.Errorf("line %d is blank in both columns while the log has entries left to show:\n%s", i+1, strings.Join(lines, "\n"))
			break
		}
	}
	if shown := len(lines) - 2 - act - 1; shown < 20 {
		t.Errorf("the log shows %d lines at 120×40, want the room the columns leave (≥ 20):\n%s", shown, strings.Join(lines, "\n"))
	}
	// The review keeps its keys and the inventory its selection.
	scr := strings.Join(lines, "\n")
	for _, want := range []string{"a Allow reading this origin  d deny", "› t1 [visible]"} {
		if !strings.Contains(scr, want) {
			t.Errorf("%q is not on screen:\n%s", want, scr)
		}
	}
}

// TestLayoutWideLogNotChargedForNarrowWrapping: entries that wrap at 80
// columns but fit one line at 160 ask for one line each, so a short log
// leaves no blank lines inside the activity section.
func TestLayoutWideLogNotChargedForNarrowWrapping(t *testing.T) {
	s := panelCases()["read"]
	// 100 characters: two lines at 80 columns, one at 160.
	text := strings.Repeat("word ", 20)
	s.Activity = []consent.Activity{{Time: fixedNow, Conversation: "c1a2", Text: text}}
	lines := screenLines(s, 160, 48)
	act := indexOf(lines, "── Activity")
	// Header 2, footer 2: the entry sits right above the footer.
	if got := len(lines) - 2 - act - 1; got != 1 {
		t.Errorf("the activity section has %d lines under its rule for one one-line entry:\n%s", got, strings.Join(lines, "\n"))
	}
}

// TestLayoutNarrowReviewLeavesRoomForNarration: at 80×24 with a review on
// screen the log gets what the review leaves (the inventory keeps its
// heading and the selected tab), so the agent's narration is readable
// whole, and the review's keys stay on screen.
func TestLayoutNarrowReviewLeavesRoomForNarration(t *testing.T) {
	for _, kind := range []string{"navigation", "read", "action_click"} {
		s := manyEntries(panelCases()[kind], 30)
		s.Activity = append(s.Activity, consent.Activity{Time: fixedNow, Conversation: "c1a2", Text: "review asked: read https://shop.example (tab t1)"})
		lines := screenLines(s, 80, 24)
		scr := strings.Join(lines, "\n")
		if !strings.Contains(squash(scr), squash(narration)) {
			t.Errorf("%s: the narration under the newest entry is not on screen whole:\n%s", kind, scr)
		}
		if !strings.Contains(scr, "  d deny") {
			t.Errorf("%s: the review's keys are not on screen:\n%s", kind, scr)
		}
		if !strings.Contains(scr, "› t1 [visible]") {
			t.Errorf("%s: the selected tab is not on screen:\n%s", kind, scr)
		}
	}
}

// TestLayoutNarrowQueueOutranksLog: other reviews waiting are decisions;
// the log does not push them off screen.
func TestLayoutNarrowQueueOutranksLog(t *testing.T) {
	s := manyEntries(queueState(), 30)
	scr := strings.Join(screenLines(s, 80, 24), "\n")
	for _, want := range []string{"action     needs attention", "read       needs attention"} {
		if !strings.Contains(scr, want) {
			t.Errorf("queue entry %q is not on screen:\n%s", want, scr)
		}
	}
}

// TestPlaceholderQueueTextWhole: the sentence saying how to reach waiting
// reviews wraps instead of being cut, in both layouts.
func TestPlaceholderQueueTextWhole(t *testing.T) {
	for _, n := range []int{1, 3} {
		s := baseState()
		for i := range n {
			r := review(consent.KindRead, "Allow reading this website?", "Allow reading this origin")
			r.ID = fmt.Sprintf("r%d", i)
			r.Tab = "t2"
			s.Queue = append(s.Queue, r)
		}
		want := "1 review waits in the queue: g shows it (or select its conversation: tab, ↑/↓)."
		if n > 1 {
			want = fmt.Sprintf("%d reviews wait in the queue: g shows the oldest (or select a conversation: tab, ↑/↓).", n)
		}
		for _, sz := range [][2]int{{80, 24}, {120, 40}} {
			lines := screenLines(s, sz[0], sz[1])
			start := -1
			for i, l := range lines {
				if strings.Contains(l, "══ No review on screen") {
					start = i
					break
				}
			}
			if start < 0 {
				t.Fatalf("%dx%d: no placeholder:\n%s", sz[0], sz[1], strings.Join(lines, "\n"))
			}
			// In the wide layout the placeholder is the right column.
			var text []string
			for _, l := range lines[start+1 : start+4] {
				if _, right, ok := strings.Cut(l, "│"); ok {
					l = right
				}
				text = append(text, l)
			}
			if got := squash(strings.Join(text, " ")); !strings.HasPrefix(got, want) {
				t.Errorf("%dx%d: placeholder reads %q, want %q whole", sz[0], sz[1], got, want)
			}
		}
	}
}

// TestWrapKeepsSpacingOfVerbatimText: text to enter and JSON results go
// through the same wrapper as prose; their indentation and inner runs of
// spaces survive, and no line is wider than asked.
func TestWrapKeepsSpacingOfVerbatimText(t *testing.T) {
	got := wrap(`    "user": "demo-user"`, 40)
	if len(got) != 1 || got[0] != `    "user": "demo-user"` {
		t.Errorf("indented line: %q", got)
	}
	got = wrap("a  b   c", 40)
	if len(got) != 1 || got[0] != "a  b   c" {
		t.Errorf("inner spaces: %q", got)
	}
	got = wrap("  region eu-west-3.example now", 18)
	if strings.Join(got, "|") != "  region|eu-west-3.example|now" {
		t.Errorf("hyphenated origin split or indentation lost: %q", got)
	}
	for _, l := range wrap("  "+strings.Repeat("é-", 30)+" tail", 7) {
		if ansi.StringWidth(l) > 7 {
			t.Errorf("line %q wider than 7", l)
		}
	}
}

// TestReviewBodyNeverSplitsHyphenatedWords: a fill of a hyphenated user
// name and an origin with hyphens stay whole in a review body.
func TestReviewBodyNeverSplitsHyphenatedWords(t *testing.T) {
	r := review(consent.KindAction, "Allow this page action?", "Allow once")
	r.Action = &consent.Action{Type: consent.ActionFill, Ref: "e3", Role: "textbox", Name: "User name for eu-west-3.example", Text: "sign in as demo-user at eu-west-3.example please"}
	for w := 30; w <= 80; w++ {
		body := strings.Join(reviewBody(&r, nil, w, false), "\n")
		for _, word := range []string{"demo-user", "eu-west-3.example"} {
			if strings.Count(body, word) != 2-boolInt(word == "demo-user") {
				t.Errorf("width %d: %q split across lines:\n%s", w, word, body)
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestNavigationBodySaysWhereTheTabIs: only a blank tab "stays
// about:blank"; a tab on a page stays on that page's origin; a tab the
// inventory does not know stays where it is. Each says where a denial
// leaves it (the browser puts a refused tab on about:blank).
func TestNavigationBodySaysWhereTheTabIs(t *testing.T) {
	r := review(consent.KindNavigation, "Allow website navigation?", "Allow origin in this tab")
	r.Origin, r.OriginUnicode = "https://next.example", "https://next.example"
	cases := []struct {
		tab        *consent.TabState
		want, nope string
	}{
		{&consent.TabState{TabInfo: consent.TabInfo{ID: "t1", URL: "about:blank"}}, "Until you decide, the tab stays about:blank and the new page is not requested", ""},
		{&consent.TabState{TabInfo: consent.TabInfo{ID: "t1", URL: ""}}, "the tab stays about:blank", ""},
		{&consent.TabState{TabInfo: consent.TabInfo{ID: "t1", URL: "http://127.0.0.1:44011/signin?next=/"}}, "Until you decide, the tab keeps showing http://127.0.0.1:44011 and the new page is not requested. If you deny, the tab is cleared to about:blank.", "stays about:blank"},
		{&consent.TabState{TabInfo: consent.TabInfo{ID: "t1", URL: "chrome-error://chromewebdata/"}}, "Until you decide, the tab keeps its current page and the new page is not requested. If you deny, the tab is cleared to about:blank.", "stays about:blank"},
		{nil, "Until you decide, the tab stays where it is and the new page is not requested. If you deny", "stays about:blank"},
	}
	for _, c := range cases {
		body := squash(strings.Join(reviewBody(&r, c.tab, 80, false), " "))
		if !strings.Contains(body, c.want) || (c.nope != "" && strings.Contains(body, c.nope)) {
			t.Errorf("tab %+v: body %q, want %q", c.tab, body, c.want)
		}
	}
	// Through the model: the focused review's tab is looked up in the
	// inventory, and the body follows the tab when it moves.
	s := withFocus(baseState(), r)
	m, _ := newTestModel(s, 80, 24)
	if scr := squash(ansi.Strip(m.View().Content)); !strings.Contains(scr, "the tab keeps showing https://shop.example") {
		t.Errorf("the panel does not name the tab's current origin:\n%s", scr)
	}
	s.Conversations = append([]consent.ConversationState(nil), s.Conversations...)
	s.Conversations[0].Tabs = append([]consent.TabState(nil), s.Conversations[0].Tabs...)
	s.Conversations[0].Tabs[0].URL = "about:blank"
	m = step(m, stateChangedMsg{state: s})
	if scr := squash(ansi.Strip(m.View().Content)); !strings.Contains(scr, "the tab stays about:blank") {
		t.Errorf("the panel did not follow the tab to about:blank:\n%s", scr)
	}
}

// TestOperatorBlankTabsFoldIntoACount: each Chromium's first tab is a
// blank operator tab; they read as one count line, not as pages. A blank
// tab with something to report, and any tab on a page, stays listed.
func TestOperatorBlankTabsFoldIntoACount(t *testing.T) {
	s := baseState()
	s.OperatorTabs = []consent.TabState{
		{TabInfo: consent.TabInfo{ID: "tab_732f434457", URL: "about:blank", Title: "about:blank"}, Status: consent.TabIdle},
		{TabInfo: consent.TabInfo{ID: "tab_0c1730f689", URL: "about:blank", Title: "about:blank"}, Status: consent.TabIdle},
		{TabInfo: consent.TabInfo{ID: "t8", URL: "about:blank"}, Status: consent.TabLoading},
		{TabInfo: consent.TabInfo{ID: "t9", URL: "https://mail.example/inbox", Title: "Inbox"}, Status: consent.TabIdle},
	}
	lines, _, _ := inventory{s: s, st: defaultStyles()}.lines(80)
	scr := ansi.Strip(strings.Join(lines, "\n"))
	for _, want := range []string{"Operator tabs (4, agents cannot touch)", "    2 blank tabs (about:blank)", "t8 [loading]", "t9  Inbox — https://mail.example/inbox"} {
		if !strings.Contains(scr, want) {
			t.Errorf("%q missing:\n%s", want, scr)
		}
	}
	if strings.Contains(scr, "tab_732f434457") || strings.Contains(scr, "about:blank — about:blank") {
		t.Errorf("a quiet blank operator tab is listed one by one:\n%s", scr)
	}
	s.OperatorTabs = s.OperatorTabs[:1]
	lines, _, _ = inventory{s: s, st: defaultStyles()}.lines(80)
	if scr := ansi.Strip(strings.Join(lines, "\n")); !strings.Contains(scr, "    1 blank tab (about:blank)") {
		t.Errorf("one blank tab:\n%s", scr)
	}
}

// A narrow column drops the quiet badges of a tab row instead of cutting
// [needs attention] in half (issue 25 §8).
func TestTabRowKeepsBadgesWhole(t *testing.T) {
	tab := consent.TabState{TabInfo: consent.TabInfo{ID: "tab_e0c071271f", URL: "https://a.example/", Title: "Popup"},
		Status: consent.TabRunning, Visible: true, NeedsAttention: true}
	v := inventory{st: defaultStyles()}
	for _, w := range []int{48, 40} {
		line := ansi.Strip(v.tabLine(tab, false, w))
		if !strings.Contains(line, " [needs attention]") || strings.Contains(line, "[visible]") {
			t.Errorf("width %d: %q", w, line)
		}
	}
	if line := ansi.Strip(v.tabLine(tab, false, 100)); !strings.Contains(line, "[visible] [running] [needs attention]") {
		t.Errorf("width 100 drops badges: %q", line)
	}
}

// The ? screen lists what each screen can do: X, [ ] and esc everywhere,
// n only at the console's own terminal (an SSH screen's n refuses), and
// it fits 80 columns whole.
func TestHelpScreenFitsItsScreen(t *testing.T) {
	for _, remote := range []bool{false, true} {
		m := New(newFake(baseState()), Options{Version: "v0.1.0", Now: fixedClock, Remote: remote, Minter: &fakeMinter{}})
		t.Cleanup(m.Close)
		r := newRunner()
		m = r.update(m, tea.WindowSizeMsg{Width: 80, Height: 24})
		m = r.update(m, press("?"))
		s := screen(m)
		for _, want := range []string{"X         revoke", "[ ]    scroll", "esc close panel", "ctrl+c "} {
			if !strings.Contains(s, want) {
				t.Errorf("remote=%v: the help lacks %q:\n%s", remote, want, s)
			}
		}
		if strings.Contains(s, "…") {
			t.Errorf("remote=%v: the help is cut at 80 columns:\n%s", remote, s)
		}
		if leave := strings.Contains(s, "q      leave"); leave != remote {
			t.Errorf("remote=%v: q says leave: %v (an SSH screen's q ends its own session only)\n%s", remote, leave, s)
		}
		if hasN := strings.Contains(s, "n   tokens"); hasN == remote {
			t.Errorf("remote=%v: the help lists n: %v\n%s", remote, hasN, s)
		}
	}
}

// p in a console with no built-in agent says why it does nothing.
func TestPromptKeyWithoutAgentSaysWhy(t *testing.T) {
	m := New(newFake(baseState()), Options{Version: "v0.1.0", Now: fixedClock})
	t.Cleanup(m.Close)
	r := newRunner()
	m = r.update(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	m = r.update(m, press("p"))
	if s := squash(screen(m)); !strings.Contains(s, "tabwarden run") {
		t.Errorf("p without an agent says nothing:\n%s", screen(m))
	}
}

// A list scrolled to its selected tab keeps the tab's conversation line in
// view when both fit (the walk saw a tab and its grant chips with no name).
func TestInventoryKeepsTheSelectedTabsConversation(t *testing.T) {
	s := baseState()
	// The first conversation's many tabs push the second one down.
	first := s.Conversations[0]
	for i := range 8 {
		first.Tabs = append(first.Tabs, consent.TabState{TabInfo: consent.TabInfo{ID: consent.TabID(fmt.Sprintf("x%d", i)), URL: "about:blank", Conversation: first.ID}})
	}
	s.Conversations[0] = first
	c := s.Conversations[1]
	s.Selection = consent.Selection{Conversation: c.ID, Tab: c.Tabs[0].ID}
	v := inventory{s: s, sel: s.Selection, st: defaultStyles(), now: fixedNow}
	for h := 3; h <= 6; h++ {
		out := ansi.Strip(v.section(80).render(80, h))
		if !strings.Contains(out, string(c.Tabs[0].ID)) {
			t.Fatalf("h=%d: the selected tab is not in view:\n%s", h, out)
		}
		if !strings.Contains(out, "▸ "+convLabel(c)) {
			t.Errorf("h=%d: the selected tab's conversation is not in view:\n%s", h, out)
		}
	}
}
