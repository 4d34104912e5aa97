package tui

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/tabwarden/tabwarden/consent"
)

func screen(m Model) string { return ansi.Strip(m.View().Content) }

func keys(m Model, ks ...string) (Model, tea.Cmd) {
	var cmd tea.Cmd
	for _, k := range ks {
		var tm tea.Model
		tm, cmd = m.Update(press(k))
		m = tm.(Model)
	}
	return m, cmd
}

func isQuit(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	_, ok := cmd().(tea.QuitMsg)
	return ok
}

func drainDecided(f *fakeService) {
	for {
		select {
		case <-f.decided:
		default:
			return
		}
	}
}

func TestApproveAndDenyDecideTheFocusedReview(t *testing.T) {
	m, f := newTestModel(panelCases()["upload"], 80, 24)
	m, _ = keys(m, "a")
	m, _ = keys(m, "d")
	drainDecided(f)
	want := []string{"decide r-upload approve", "decide r-upload deny"}
	if got := f.Calls(); !slices.Equal(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	if !strings.Contains(screen(m), "denied") {
		t.Errorf("no feedback after deny:\n%s", screen(m))
	}
}

func TestTooEarlyFlashesAndDecidesNothingElse(t *testing.T) {
	m, f := newTestModel(panelCases()["navigation"], 80, 24)
	f.decideFn = func(string, bool) error { return consent.ErrTooEarly }
	m, cmd := keys(m, "a")
	drainDecided(f)
	if !strings.Contains(screen(m), "key ignored: review just appeared") {
		t.Fatalf("no key-ignored flash:\n%s", screen(m))
	}
	if cmd == nil {
		t.Fatal("the flash has no expiry command")
	}
	// The flash expires with its own message, not a newer flash's.
	m2 := step(m, flashDoneMsg{seq: m.flashSeq - 1})
	if !strings.Contains(screen(m2), "key ignored") {
		t.Error("a stale expiry cleared the current flash")
	}
	m3 := step(m, cmd())
	if strings.Contains(screen(m3), "key ignored") {
		t.Error("the flash did not expire")
	}
	if got := f.Calls(); len(got) != 1 {
		t.Errorf("calls = %v, want one decide", got)
	}
}

func TestDecideErrorsAreShown(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{consent.ErrNoSuchReview, "already resolved"},
		{consent.ErrNotShown, "not on screen"},
		{errors.New("boom"), "decision failed: boom"},
	} {
		m, f := newTestModel(panelCases()["read"], 80, 24)
		f.decideFn = func(string, bool) error { return tc.err }
		m, _ = keys(m, "d")
		drainDecided(f)
		if !strings.Contains(screen(m), tc.want) {
			t.Errorf("%v: screen lacks %q", tc.err, tc.want)
		}
	}
}

func TestApproveWithoutReviewCallsNothing(t *testing.T) {
	m, f := newTestModel(baseState(), 80, 24)
	m, _ = keys(m, "a", "d")
	if got := f.Calls(); len(got) != 0 {
		t.Errorf("calls = %v, want none", got)
	}
	if !strings.Contains(screen(m), "no review on screen") {
		t.Error("no explanation for a without a review")
	}
}

func TestConversationControlsUseSelection(t *testing.T) {
	m, f := newTestModel(baseState(), 80, 24)
	keys(m, "t", "r", "x")
	want := []string{"takeover c1a2", "resume c1a2", "cancel c1a2"}
	if got := f.Calls(); !slices.Equal(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
}

func TestMovingSelectionCallsSelect(t *testing.T) {
	m, f := newTestModel(baseState(), 80, 24)
	m, _ = keys(m, "down", "down", "down", "up")
	m, _ = keys(m, "tab", "tab", "shift+tab")
	want := []string{
		"select c1a2 t2", "select c3d4 t3", "select c1a2 t1", "select c3d4 t3",
		"select c1a2 ", "select c3d4 ", "select c1a2 ",
	}
	if got := f.Calls(); !slices.Equal(got, want) {
		t.Fatalf("calls =\n%v\nwant\n%v", got, want)
	}
	// A snapshot is the truth: it replaces the optimistic selection.
	s := baseState()
	s.Selection = consent.Selection{Conversation: "c3d4", Tab: "t3"}
	m = step(m, stateChangedMsg{state: s})
	if !strings.Contains(screen(m), "› t3") {
		t.Errorf("snapshot selection not shown:\n%s", screen(m))
	}
}

func TestOperatorTabsAreNotSelectable(t *testing.T) {
	items := navItems(baseState())
	for _, it := range items {
		if it.tab == "t9" {
			t.Fatalf("operator tab t9 is a selection stop: %v", items)
		}
	}
}

func TestQuitAsksWhenConversationsLive(t *testing.T) {
	m, f := newTestModel(panelCases()["navigation"], 80, 24)
	m, cmd := keys(m, "q")
	if isQuit(cmd) {
		t.Fatal("q quit without asking")
	}
	if !strings.Contains(screen(m), "quit? live conversations will be canceled (y/n)") {
		t.Fatalf("no quit question:\n%s", screen(m))
	}
	// While the question is open, `a` only dismisses it.
	m, cmd = keys(m, "a")
	if isQuit(cmd) || len(f.Calls()) != 0 {
		t.Fatalf("a during the quit question: quit=%v calls=%v", isQuit(cmd), f.Calls())
	}
	if strings.Contains(screen(m), "quit?") {
		t.Error("question still open after a non-y key")
	}
	m, _ = keys(m, "ctrl+c")
	_, cmd = keys(m, "y")
	if !isQuit(cmd) {
		t.Fatal("y did not quit")
	}
	if got := f.Calls(); !slices.Equal(got, []string{"cancel c1a2", "cancel c3d4"}) {
		t.Errorf("calls = %v, want both conversations cancelled", got)
	}
}

// Quitting the console ends the SSH screens too: the question names who
// will be disconnected, and asks even with no conversation live (the
// eleventh walk's two operators were dropped with no word of it).
func TestQuitNamesTheSSHOperators(t *testing.T) {
	st := panelCases()["navigation"]
	st.Operators = []string{"ana", "bob"}
	m, _ := newTestModel(st, 120, 40)
	m, _ = keys(m, "q")
	if !strings.Contains(screen(m), "quit? live conversations will be canceled and ana, bob (SSH) disconnected (y/n)") {
		t.Errorf("the quit question does not name the operators:\n%s", screen(m))
	}
	m, _ = newTestModel(st, 60, 24)
	m, _ = keys(m, "q")
	if !strings.Contains(screen(m), "quit? ends the conversations and 2 SSH screens (y/n)") {
		t.Errorf("a narrow quit question does not count the screens:\n%s", screen(m))
	}
	m, _ = newTestModel(consent.State{Profile: consent.ProfileStrict, Operators: []string{"ana"}}, 80, 24)
	m, cmd := keys(m, "q")
	if isQuit(cmd) || !strings.Contains(screen(m), "quit? ana (SSH) will be disconnected (y/n)") {
		t.Errorf("q with an operator and no conversation: quit=%v\n%s", isQuit(cmd), screen(m))
	}
	if _, cmd := keys(m, "y"); !isQuit(cmd) {
		t.Error("y did not quit")
	}
}

func TestQuitWithoutConversationsIsImmediate(t *testing.T) {
	m, _ := newTestModel(consent.State{Profile: consent.ProfileStrict}, 80, 24)
	if _, cmd := keys(m, "q"); !isQuit(cmd) {
		t.Fatal("q with no conversations did not quit")
	}
}

func TestMintToken(t *testing.T) {
	m, _ := newTestModel(baseState(), 80, 24)
	m, _ = keys(m, "n")
	if !strings.Contains(screen(m), "agent tokens arrive with the MCP server") {
		t.Errorf("n without a minter:\n%s", screen(m))
	}
	f := newFake(baseState())
	minter := &fakeMinter{names: []string{"default"}}
	m = New(f, Options{Now: fixedClock, Minter: minter})
	m = step(m, windowMsg(80, 24))
	m, _ = keys(m, "n")
	if s := screen(m); !strings.Contains(s, "Agent tokens (esc closes)") || !strings.Contains(s, "▸ default") || !strings.Contains(s, "1 claude-code  2 codex") {
		t.Fatalf("token panel:\n%s", s)
	}
	m, cmd := keys(m, "1")
	if !slices.Equal(minter.names, []string{"default", "claude-code"}) {
		t.Fatalf("1 minted %v", minter.names)
	}
	s := screen(m)
	// The configuration is shown whole (every character of the secret, cut
	// only at the edge) and copied with OSC 52.
	if !strings.Contains(strings.ReplaceAll(s, "\n", ""), "tw_test-secret-that-is-long-enough-to-pass-the-edge") && !strings.Contains(squashRows(s), "tw_test-secret-that-is-long-enough-to-pass-the-edge") {
		t.Errorf("minted configuration not shown whole:\n%s", s)
	}
	if !hasClipboard(cmd, "tw_test-secret-that-is-long-enough-to-pass-the-edge") {
		t.Errorf("the configuration was not copied with OSC 52")
	}
	// esc goes back to the list, ↓ selects the new token; X asks, y revokes.
	m, _ = keys(m, "esc", "down", "X")
	if !slices.Equal(minter.names, []string{"default", "claude-code"}) || !strings.Contains(squash(screen(m)), "revoke claude-code for good? its conversations end (y/n)") {
		t.Fatalf("X revoked %v without asking\n%s", minter.names, screen(m))
	}
	m, _ = keys(m, "n")
	if !slices.Equal(minter.names, []string{"default", "claude-code"}) || !strings.Contains(screen(m), "kept token claude-code") {
		t.Fatalf("n to the question revoked %v\n%s", minter.names, screen(m))
	}
	m, _ = keys(m, "X", "y")
	if !slices.Equal(minter.names, []string{"default"}) || !strings.Contains(screen(m), "revoked token claude-code") {
		t.Fatalf("X revoked %v\n%s", minter.names, screen(m))
	}
	m, _ = keys(m, "esc")
	if strings.Contains(screen(m), "Agent tokens") {
		t.Error("esc did not close the token panel")
	}
}

// squashRows joins the screen's rows, trimmed, so a line cut at the edge
// reads as one.
func squashRows(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		b.WriteString(strings.TrimSpace(l))
	}
	return b.String()
}

// hasClipboard reports whether cmd (or a batch of them) sets the clipboard
// to something containing want.
func hasClipboard(cmd tea.Cmd, want string) bool {
	if cmd == nil {
		return false
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			if hasClipboard(c, want) {
				return true
			}
		}
	default:
		// tea.SetClipboard's message type is unexported: a string kind
		// named setClipboardMsg.
		v := reflect.ValueOf(msg)
		return fmt.Sprintf("%T", msg) == "tea.setClipboardMsg" && v.Kind() == reflect.String && strings.Contains(v.String(), want)
	}
	return false
}

func TestHelpToggles(t *testing.T) {
	m, _ := newTestModel(baseState(), 80, 24)
	if strings.Contains(screen(m), "prev conv") {
		t.Fatal("full help shown before ?")
	}
	m, _ = keys(m, "?")
	if !strings.Contains(screen(m), "prev conv") {
		t.Fatal("? did not show full help")
	}
	m, _ = keys(m, "?")
	if strings.Contains(screen(m), "prev conv") {
		t.Fatal("? did not hide full help")
	}
}

func TestDisclosureScrollsAndNewReviewStartsAtTop(t *testing.T) {
	m, _ := newTestModel(panelCases()["disclosure"], 80, 24)
	if !strings.Contains(screen(m), "lines 1-") {
		t.Fatalf("disclosure does not say it scrolls:\n%s", screen(m))
	}
	m, _ = keys(m, "pgdown", "j")
	if m.vp.YOffset() == 0 || strings.Contains(screen(m), "lines 1-") {
		t.Fatalf("pgdown/j did not scroll (offset %d)", m.vp.YOffset())
	}
	m, _ = keys(m, "k")
	off := m.vp.YOffset()
	m, _ = keys(m, "pgup")
	if m.vp.YOffset() >= off {
		t.Errorf("pgup did not scroll up")
	}
	// Scrolling never decides.
	other := panelCases()["plan"]
	m, _ = keys(m, "pgdown")
	m = step(m, stateChangedMsg{state: other})
	if m.vp.YOffset() != 0 {
		t.Errorf("a new review kept the old scroll offset %d", m.vp.YOffset())
	}
}

func TestRemainingTimeTicks(t *testing.T) {
	now := fixedNow
	f := newFake(panelCases()["navigation"])
	m := New(f, Options{Now: func() time.Time { return now }})
	m = step(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	if !strings.Contains(screen(m), "42s left") {
		t.Fatalf("want 42s left:\n%s", screen(m))
	}
	now = now.Add(time.Second)
	tm, cmd := m.Update(tickMsg(now))
	if cmd == nil {
		t.Fatal("tick did not schedule the next tick")
	}
	if !strings.Contains(screen(tm.(Model)), "41s left") {
		t.Errorf("want 41s left after a tick")
	}
	now = now.Add(time.Minute)
	tm, _ = tm.Update(tickMsg(now))
	if !strings.Contains(screen(tm.(Model)), "expired") {
		t.Errorf("want expired past the deadline")
	}
}

func TestStateChangedResubscribes(t *testing.T) {
	f := newFake(baseState())
	// No bell: the one command the change returns is the re-subscription.
	m := New(f, Options{Now: fixedClock, Notify: NotifyOff})
	defer m.Close()
	if m.Init() == nil {
		t.Fatal("Init starts nothing")
	}
	f.set(panelCases()["read"])
	msg := m.waitForChange()()
	sc, ok := msg.(stateChangedMsg)
	if !ok || sc.state.Focused == nil || sc.state.Focused.ID != "r-read" {
		t.Fatalf("waitForChange returned %#v", msg)
	}
	tm, cmd := m.Update(sc)
	if cmd == nil {
		t.Fatal("no re-subscription after a change")
	}
	if !strings.Contains(screen(tm.(Model)), "Allow reading this origin") {
		t.Error("new snapshot not rendered")
	}
	// Close stops a pending wait instead of leaking it.
	m.Close()
	if msg := cmd(); msg != nil {
		t.Errorf("wait after Close returned %#v", msg)
	}
	if !f.unsubbed {
		t.Error("Close did not unsubscribe")
	}
}

func TestSiteTextCannotInjectEscapes(t *testing.T) {
	r := review(consent.KindToolCall, "Allow site tool call?", "Allow once")
	r.ToolCall = &consent.ToolCall{ToolName: "evil\x1b[2J\x1b[31mtool", InputSummary: "x\u202eexample.com"}
	r.ConversationName = "name\x07bell"
	raw := renderState(withFocus(baseState(), r), 80, 24)
	for _, bad := range []string{"\x1b[2J", "\x1b[31mtool", "\a", "\u202e"} {
		if strings.Contains(raw, bad) {
			t.Errorf("rendered screen contains %q", bad)
		}
	}
	if !strings.Contains(raw, "evil\uFFFD[2J") {
		t.Errorf("neutralised text not shown")
	}
}

func TestEveryKindHasAPanel(t *testing.T) {
	kinds := []consent.ReviewKind{consent.KindNavigation, consent.KindRead, consent.KindAction, consent.KindPlan,
		consent.KindUpload, consent.KindToolCall, consent.KindDisclosure, consent.KindThread, consent.KindSession}
	seen := map[consent.ReviewKind]bool{}
	for _, s := range panelCases() {
		seen[s.Focused.Kind] = true
	}
	for _, k := range kinds {
		if !seen[k] {
			t.Errorf("no golden panel for kind %s", k)
		}
	}
}

func TestPanelContents(t *testing.T) {
	cases := panelCases()
	for name, wants := range map[string][]string{
		"action_click":  {`click the button "Add to cart"`},
		"action_coord":  {"click at x=412, y=288"},
		"action_fill":   {`fill the textbox "Delivery note"`, "Please leave the parcel", "Thanks!"},
		"action_select": {`select value "M" in the combobox "Size"`},
		"action_key":    {"press the key Enter"},
		"action_scroll": {"scroll down 600 px (deltaY 600)"},
		"plan":          {" 1.", " 2.", " 3.", " 4.", `verify text_contains "Saved 1"`},
		"upload":        {"invoice-2026-11.pdf", "1.2 MiB (1,258,291 bytes)", "9f86d081 884c7d65 9a2feaa0 c55ad015 a3bf4f1b 2b0b822c d15d6c15 b0f00a08"},
		"tool_call":     {"save_draft — Save a draft", `"apiKey":"[redacted]"`, "advisory only"},
		"tool_values":   {"input (values sent; keys that look secret are masked):", `"apiKey": "•••"`, "Numbers are up 4%", "… 2 more lines (enter shows all)"},
		"disclosure":    {"713 bytes", "result (complete"},
		"thread":        {"a Allow browser control for this thread  d deny", "consent: THREAD"},
		"session":       {"a Allow for this session  d deny", "consent: TRUSTED"},
		"punycode":      {"https://bücher.example:8443 (decoded)", "https://xn--bcher-kva.example:8443"},
		"navigation":    {"a Allow origin in this tab  d deny", "42s left", "tab t1"},
	} {
		got := plain(renderState(cases[name], 160, 48))
		for _, w := range wants {
			if !strings.Contains(got, w) {
				t.Errorf("%s: screen lacks %q:\n%s", name, w, got)
			}
		}
	}
}

// A digest that wraps is cut between its groups of eight, never inside one,
// so the operator compares whole groups at any width.
func TestDigestWrapsBetweenGroups(t *testing.T) {
	cases := panelCases()
	for _, name := range []string{"upload", "disclosure"} {
		var digest string
		if r := cases[name].Focused; r.Upload != nil {
			digest = r.Upload.SHA256
		} else {
			digest = r.Disclosure.SHA256
		}
		for _, w := range []int{60, 80, 100} {
			got := plain(renderState(cases[name], w, 24))
			for i := 0; i < len(digest); i += 8 {
				if !strings.Contains(got, digest[i:i+8]) {
					t.Errorf("%s at width %d: group %q of the digest is cut:\n%s", name, w, digest[i:i+8], got)
				}
			}
		}
	}
}

func TestTakeOverBanner(t *testing.T) {
	// The banner wraps like prose; compare its words, not its line breaks.
	got := strings.Join(strings.Fields(plain(renderState(pausedState(), 80, 24))), " ")
	if !strings.Contains(got, takeOverText) {
		t.Errorf("no take-over banner:\n%s", got)
	}
	if strings.Contains(plain(renderState(baseState(), 160, 48)), "You have the browser") {
		t.Error("banner shown while not paused")
	}
	// A conversation with no tab has no page to show: the banner says so
	// instead of pointing at a window or v (the eleventh walk).
	noTab := pausedState()
	noTab.Conversations[0].Tabs = nil
	got = strings.Join(strings.Fields(plain(renderState(noTab, 80, 24))), " ")
	if !strings.Contains(got, noTabTakeOverText) || strings.Contains(got, "You have the browser") {
		t.Errorf("take-over of a conversation with no tab:\n%s", got)
	}
}

func TestQueueMarksWaitingReviews(t *testing.T) {
	got := plain(renderState(queueState(), 80, 24))
	if n := strings.Count(got, "needs attention"); n < 2 {
		t.Errorf("want the two waiting reviews marked, got %d marks:\n%s", n, got)
	}
	if !strings.Contains(got, "Review queue (3)") {
		t.Errorf("queue count missing")
	}
}

func TestActivityLinesCap(t *testing.T) {
	f := newFake(baseState())
	m := New(f, Options{Now: fixedClock, ActivityLines: 1})
	m = step(m, windowMsg(80, 24))
	got := screen(m)
	if strings.Contains(got, "42 elements") || !strings.Contains(got, "connected") {
		t.Errorf("want only the newest activity line:\n%s", got)
	}
}

// enter expands a site tool's input to all of its values, and again
// collapses it; the secret stays masked either way.
func TestToolInputExpands(t *testing.T) {
	st := panelCases()["tool_values"]
	collapsed := plain(renderState(st, 160, 48))
	if strings.Contains(collapsed, `"title"`) || !strings.Contains(collapsed, "2 more lines") {
		t.Fatalf("collapsed input shows too much or too little:\n%s", collapsed)
	}
	expanded := plain(renderState(st, 160, 48, press("enter")))
	for _, want := range []string{`"draft"`, `"title": "Weekly report"`, `"apiKey": "•••"`} {
		if !strings.Contains(expanded, want) {
			t.Errorf("expanded input lacks %s:\n%s", want, expanded)
		}
	}
	if strings.Contains(expanded, "more lines (enter shows all)") {
		t.Errorf("expanded input still collapsed:\n%s", expanded)
	}
}

// An SSH screen starts with a conversation selected, so its first t takes
// it over; one that joins before any conversation selects the first to
// arrive (issue 25 §4).
func TestRemoteScreenSelectsAConversation(t *testing.T) {
	s := baseState()
	s.Selection = consent.Selection{}
	f := newFake(s)
	m := New(f, Options{Now: fixedClock, Operator: consent.Operator{Name: "bob"}, Remote: true})
	t.Cleanup(m.Close)
	r := newRunner()
	m = r.update(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	m = r.update(m, press("t"))
	if calls := f.Calls(); !slices.Contains(calls, "takeover c1a2") {
		t.Fatalf("t on a fresh SSH screen: calls %v\n%s", calls, screen(m))
	}

	empty := baseState()
	empty.Conversations, empty.Selection = nil, consent.Selection{}
	f2 := newFake(empty)
	m2 := New(f2, Options{Now: fixedClock, Operator: consent.Operator{Name: "bob"}, Remote: true})
	t.Cleanup(m2.Close)
	m2 = r.update(m2, tea.WindowSizeMsg{Width: 80, Height: 24})
	m2 = r.update(m2, press("t"))
	if !strings.Contains(screen(m2), "no conversation selected: tab selects one") {
		t.Errorf("t with nothing to select says nothing:\n%s", screen(m2))
	}
	m2 = r.update(m2, stateChangedMsg{state: baseState()})
	if m2.sel.Conversation == "" {
		t.Error("the first conversation to arrive was not selected")
	}
}

// An SSH screen does not offer n (only the console's terminal mints
// tokens): neither its footer nor its header names it, at either width,
// and n there still says where tokens are minted (issue 25 walk).
func TestRemoteScreenDoesNotOfferMint(t *testing.T) {
	s := baseState()
	s.Info.Endpoint = "http://127.0.0.1:8765/mcp (token: default; n mints another)"
	for _, w := range []int{80, 140} {
		for _, remote := range []bool{false, true} {
			f := newFake(s)
			m := New(f, Options{Now: fixedClock, Operator: consent.Operator{Name: "bob"}, Remote: remote})
			t.Cleanup(m.Close)
			r := newRunner()
			m = r.update(m, tea.WindowSizeMsg{Width: w, Height: 30})
			sc := screen(m)
			offers := strings.Contains(sc, "n tokens") || strings.Contains(sc, "n mints another")
			if offers == remote {
				t.Errorf("%d columns, remote %v: offers n %v:\n%s", w, remote, offers, sc)
			}
			if remote {
				m = r.update(m, press("n"))
				if !strings.Contains(screen(m), "minted at the console's own terminal") {
					t.Errorf("n on an SSH screen says nothing:\n%s", screen(m))
				}
			}
		}
	}
}

// esc closes the key help, as the help itself says (esc close panel); tab
// reaches an ended conversation, as ↓ does, so o can keep its tabs; with
// nothing to move to it says so (the twelfth walk met all three silent).
func TestEscTabAndEnterSaySomething(t *testing.T) {
	m, _ := newTestModel(baseState(), 120, 40)
	m, _ = keys(m, "?")
	if !m.showHelp {
		t.Fatal("? did not open the help")
	}
	m, _ = keys(m, "esc")
	if m.showHelp {
		t.Error("esc left the help open")
	}
	m, _ = keys(m, "enter")
	if !strings.Contains(screen(m), "details on:") {
		t.Errorf("enter said nothing:\n%s", screen(m))
	}

	ended := consent.State{Profile: consent.ProfileStrict, Ended: []consent.EndedConversation{{ID: "c9", Name: "opencode"}}}
	m, f := newTestModel(ended, 120, 40)
	m, _ = keys(m, "tab")
	if m.sel.Conversation != "c9" || !slices.Contains(f.Calls(), "select c9 ") {
		t.Errorf("tab did not select the ended conversation: sel %+v calls %v", m.sel, f.Calls())
	}
	m, _ = newTestModel(consent.State{Profile: consent.ProfileStrict}, 120, 40)
	m, _ = keys(m, "tab")
	if !strings.Contains(screen(m), "no conversation to move to") {
		t.Errorf("tab with no conversation said nothing:\n%s", screen(m))
	}
	// Once one has come and gone the list does not say "yet".
	gone := consent.State{Profile: consent.ProfileStrict, Activity: []consent.Activity{{Conversation: "c1", Name: "codex", Text: "connected"}}}
	m, _ = newTestModel(gone, 120, 40)
	if s := screen(m); !strings.Contains(s, "No live conversations") || strings.Contains(s, "No conversations yet") {
		t.Errorf("the empty list after a conversation:\n%s", s)
	}
}

// The details of a tab say each thing once: "running act", not "running ·
// running act", and the navigation grant only among the conversation's
// grants when those are listed (the thirteenth walk).
func TestDetailsSayEachThingOnce(t *testing.T) {
	c := consent.ConversationState{ID: "c1", Grants: []string{"navigation https://a.test in tab t1"}}
	tab := consent.TabState{TabInfo: consent.TabInfo{ID: "t1", URL: "https://a.test/"}, Status: consent.TabRunning, Operation: "act", NavigationGrant: []string{"https://a.test"}}
	got := strings.Join(inventory{st: defaultStyles()}.detailLines(c, tab, 100), "\n")
	if strings.Contains(got, "running · running") || !strings.Contains(got, "running act") {
		t.Errorf("status:\n%s", got)
	}
	if strings.Contains(got, "nav grants") || !strings.Contains(got, "navigation https://a.test in tab t1") {
		t.Errorf("grants:\n%s", got)
	}
}
