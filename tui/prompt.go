package tui

import (
	"errors"
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// The task prompt (`p`): one line where the operator types a new task for
// the built-in agent (design.md §12). While it is open it takes every key, so
// an `a` or `d` typed into a task never decides a review; enter starts the
// task through Options.StartTask, esc (or ctrl+c) closes it unsent.

const (
	promptLabel = "new task › "
	// promptMaxChars bounds a task; longer text is not accepted.
	promptMaxChars = 2000
	flashNoTask    = "no task given: nothing started"
)

// taskStartedMsg is StartTask's answer for one submitted task.
type taskStartedMsg struct {
	task string
	err  error
}

func newPromptInput() textinput.Model {
	in := textinput.New()
	in.Prompt = promptLabel
	in.Placeholder = "what should the built-in agent do? enter starts it, esc cancels"
	in.CharLimit = promptMaxChars
	// ctrl+v would read the clipboard of the machine the console runs on
	// (another person's, over SSH); a terminal's own paste still types.
	in.KeyMap.Paste.SetEnabled(false)
	st := in.Styles()
	st.Cursor.Blink = false // a steady cursor: no blink ticks, stable frames
	in.SetStyles(st)
	return in
}

// openPrompt opens the task prompt when the console can start tasks.
func (m *Model) openPrompt() tea.Cmd {
	if m.opts.StartTask == nil {
		return nil
	}
	m.input = newPromptInput()
	m.setPromptOpen(true)
	m.sizePrompt()
	return m.input.Focus()
}

// screenHolder is the part of the engine that keeps waiting reviews from
// taking the screen while the operator types (*consent.Engine has it).
type screenHolder interface{ HoldAutoShow(hold bool) }

// setPromptOpen opens or closes the prompt. While the local screen's
// prompt is open no review comes on screen by itself: the operator is
// typing a task (design.md §4 "No review waits unseen").
func (m *Model) setPromptOpen(open bool) {
	if m.promptOpen == open {
		return
	}
	m.promptOpen = open
	if h, ok := m.svc.(screenHolder); ok && !m.opts.Remote {
		h.HoldAutoShow(open)
	}
}

func (m *Model) sizePrompt() {
	w, _ := m.size()
	m.input.SetWidth(max(w-width(promptLabel)-1, 1))
}

// promptKey handles every key while the prompt is open.
func (m *Model) promptKey(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "esc", "ctrl+c":
		m.setPromptOpen(false)
		return m.setFlash("new task canceled")
	case "enter":
		m.setPromptOpen(false)
		task := strings.TrimSpace(clean(m.input.Value()))
		if task == "" {
			return m.setFlash(flashNoTask)
		}
		start := m.opts.StartTask
		return tea.Batch(m.setFlash("starting the built-in agent on: "+trunc(task, 60)), func() tea.Msg {
			return taskStartedMsg{task: task, err: start(task)}
		})
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return cmd
}

// taskStarted reports StartTask's answer in the status line, an error with
// its design.md §5 code.
func (m *Model) taskStarted(msg taskStartedMsg) tea.Cmd {
	if msg.err != nil {
		return m.setFlash("new task not started: " + codedError(msg.err))
	}
	return m.setFlash("built-in agent started on: " + trunc(msg.task, 60))
}

// codedError is err as "code: message", the code from errcode.Of.
func codedError(err error) string {
	var ce *errcode.Error
	if errors.As(err, &ce) {
		return clean(string(ce.Code) + ": " + ce.Message)
	}
	return clean(string(errcode.Of(err)) + ": " + err.Error())
}
