package tui

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// decisions are the fake's Decide calls.
func decisions(f *fakeService) []string {
	var out []string
	for _, c := range f.Calls() {
		if strings.HasPrefix(c, "decide ") || strings.HasPrefix(c, "cancel ") || strings.HasPrefix(c, "takeover ") {
			out = append(out, c)
		}
	}
	return out
}

// The real program: with a review on screen, p opens the prompt; the task
// typed into it (with an a and a d among its letters, and an x) reaches
// StartTask on enter, and none of its keys decided the review or cancelled
// anything. After the prompt closes, a approves as usual.
func TestPromptTaskReachesStartTaskAndDecidesNothing(t *testing.T) {
	f := newFake(panelCases()["navigation"])
	tasks := make(chan string, 1)
	m := New(f, Options{Version: "test", Now: fixedClock, StartTask: func(task string) error {
		tasks <- task
		return nil
	}})
	defer m.Close()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	teatest.WaitFor(t, tm.Output(), screenHas("Allow origin in this tab"), teatest.WithDuration(5*time.Second))

	tm.Type("p")
	teatest.WaitFor(t, tm.Output(), screenHas("new task ›"), teatest.WithDuration(5*time.Second))
	const task = "add a draft and take notes, then exit"
	tm.Type(task)
	tm.Send(tea.PasteMsg{Content: " (pasted: a d)"})
	tm.Send(press("enter"))
	var started string
	select {
	case started = <-tasks:
	case <-time.After(5 * time.Second):
		t.Fatal("the typed task never reached StartTask")
	}
	if got := decisions(f); len(got) != 0 {
		t.Fatalf("keys typed into the prompt acted on the console: %v", got)
	}
	if started != task+" (pasted: a d)" {
		t.Fatalf("StartTask got %q", started)
	}

	// The prompt is closed: a is approve again.
	tm.Type("a")
	if got := waitDecided(t, f); got != "r-navigation approve" {
		t.Fatalf("a after the prompt: %q", got)
	}
	tm.Type("q")
	tm.Type("y")
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}

// esc closes the prompt unsent; enter on an empty prompt starts nothing.
func TestPromptEscAndEmpty(t *testing.T) {
	f := newFake(panelCases()["navigation"])
	var got []string
	m := New(f, Options{Version: "test", Now: fixedClock, StartTask: func(task string) error {
		got = append(got, task)
		return nil
	}})
	defer m.Close()
	m = step(m, windowMsg(80, 24))
	for _, k := range []string{"p", "a", "x", "t", "esc"} {
		m = m.runKey(k)
	}
	if m.promptOpen || len(got) != 0 || len(decisions(f)) != 0 {
		t.Fatalf("after esc: open %v, tasks %v, calls %v", m.promptOpen, got, f.Calls())
	}
	if s := plain(m.View().Content); !strings.Contains(s, "new task canceled") {
		t.Fatalf("esc did not say the task was cancelled:\n%s", s)
	}
	for _, k := range []string{"p", " ", "enter"} {
		m = m.runKey(k)
	}
	if m.promptOpen || len(got) != 0 {
		t.Fatalf("an empty task: open %v, tasks %v", m.promptOpen, got)
	}
	if s := plain(m.View().Content); !strings.Contains(s, flashNoTask) {
		t.Fatalf("an empty task is not reported:\n%s", s)
	}
	for _, k := range []string{"p", "g", "o", "enter"} {
		m = m.runKey(k)
	}
	if s := plain(m.View().Content); !slices.Equal(got, []string{"go"}) || !strings.Contains(s, "built-in agent started on: go") {
		t.Fatalf("a started task: tasks %v\n%s", got, s)
	}
}

// runKey presses k and runs the commands it returns that answer at once
// (StartTask's answer), as the program would.
func (m Model) runKey(k string) Model {
	tm, cmd := m.Update(press(k))
	m = tm.(Model)
	for _, msg := range immediate(cmd) {
		if r, ok := msg.(taskStartedMsg); ok {
			m = step(m, r)
		}
	}
	return m
}

// immediate runs cmd and the commands of a batch, keeping the messages of
// those that are not timers.
func immediate(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		if b, ok := msg.(tea.BatchMsg); ok {
			var out []tea.Msg
			for _, c := range b {
				out = append(out, immediate(c)...)
			}
			return out
		}
		return []tea.Msg{msg}
	case <-time.After(100 * time.Millisecond):
		return nil // a tick
	}
}

// A failed start is shown with its design.md §5 code.
func TestPromptErrorShowsCode(t *testing.T) {
	f := newFake(baseState())
	m := New(f, Options{Version: "test", Now: fixedClock, StartTask: func(string) error {
		return errcode.Errorf(errcode.BrowserUnavailable, errcode.NextNone, "the console is shutting down")
	}})
	defer m.Close()
	m = step(m, windowMsg(120, 40))
	for _, k := range []string{"p", "g", "o", "enter"} {
		m = m.runKey(k)
	}
	if s := plain(m.View().Content); !strings.Contains(s, "new task not started: browser_unavailable: the console is shutting down") {
		t.Fatalf("the error is not on screen with its code:\n%s", s)
	}
	if got := codedError(errors.New("boom")); got != "browser_operation_failed: boom" {
		t.Errorf("an error without a code: %q", got)
	}
}

// Without StartTask, p opens no prompt (it says why, and nothing else
// changes) and no help mentions it; with it, the
// footer names it at 80 columns and at every width up to the wide one,
// whole, and the ? screen lists it.
func TestPromptKeyOnlyWithStartTask(t *testing.T) {
	f := newFake(baseState())
	m := New(f, Options{Version: "test", Now: fixedClock})
	defer m.Close()
	m = step(m, windowMsg(80, 24))
	m = m.runKey("p")
	after := plain(m.View().Content)
	if m.promptOpen || !strings.Contains(squash(after), "no agent here: start with tabwarden run") {
		t.Fatalf("p without StartTask opened a prompt or did not say why:\n%s", after)
	}
	m = m.runKey("?")
	for _, w := range []int{80, 160} {
		m = step(m, windowMsg(w, 48))
		if s := plain(m.View().Content); strings.Contains(s, "p new task") || strings.Contains(s, "p task") {
			t.Fatalf("%d columns: p is offered without StartTask:\n%s", w, s)
		}
	}

	opts := Options{Version: "test", Now: fixedClock, StartTask: func(string) error { return nil }}
	for _, w := range []int{80, 100, 123, 124, 135, 136, 160} {
		m := New(f, opts)
		m = step(m, windowMsg(w, 24))
		lines := strings.Split(strings.TrimRight(plain(m.View().Content), "\n"), "\n")
		foot := lines[len(lines)-1]
		want := []string{"p task", "t take", "r resume", "x stop", "g next", "tab conv", "↵ details", "? help", "q quit"}
		if w >= m.keys.wideFrom() {
			want = []string{"p new task", "n tokens", "a approve", "d deny", "enter details", "q quit"}
		}
		for _, s := range want {
			if !strings.Contains(foot, s) {
				t.Errorf("%d columns: footer %q lacks %q", w, foot, s)
			}
		}
		if strings.Contains(foot, "…") || width(foot) > w {
			t.Errorf("%d columns: footer cut: %q", w, foot)
		}
		m.Close()
	}
	m2 := New(f, opts)
	defer m2.Close()
	m2 = step(m2, windowMsg(160, 48))
	m2 = m2.runKey("?")
	if s := plain(m2.View().Content); !regexp.MustCompile(`\bp +new task`).MatchString(s) || !regexp.MustCompile(`\bn +tokens`).MatchString(s) {
		t.Fatalf("the ? screen lacks p or n:\n%s", s)
	}
	if !slices.Contains(m2.keys.Prompt.Keys(), "p") {
		t.Fatal("the prompt is not on p")
	}
}
