package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/tabwarden/tabwarden/consent"
)

const flashRemoteMint = "agent tokens are minted at the console's own terminal"

// operator is who this screen's keys act for.
func (m *Model) operator() consent.Operator {
	if m.opts.Operator.Name == "" {
		return consent.LocalOperator
	}
	return m.opts.Operator
}

// noteSeen records when the focused review first reached this screen, for
// the per-screen key-ahead guard.
func (m *Model) noteSeen() {
	f := m.state.Focused
	switch {
	case f == nil:
		m.seenID, m.seenAt = "", time.Time{}
	case f.ID != m.seenID:
		m.seenID, m.seenAt = f.ID, time.Now()
	}
}

func (m *Model) decideAs(id string, approve bool) error {
	if os, ok := m.svc.(OperatorService); ok {
		var seen time.Time
		if id == m.seenID {
			seen = m.seenAt
		}
		return os.DecideAs(consent.Decision{Review: id, Approve: approve, By: m.operator(), SeenAt: seen})
	}
	return m.svc.Decide(id, approve)
}

func (m *Model) takeOver(conv consent.ConversationID) error {
	if os, ok := m.svc.(OperatorService); ok {
		return os.TakeOverAs(conv, m.operator())
	}
	return m.svc.TakeOver(conv)
}

// resume ends the selected conversation's take-over. One taken over by
// another operator needs an explicit second `r` (pending is the
// conversation a previous `r` asked about).
func (m *Model) resume(pending consent.ConversationID) tea.Cmd {
	c := m.selectedConversation()
	if c != nil && c.Paused && c.PausedBy != "" && c.PausedBy != m.operator().Name && pending != c.ID {
		m.resumeConv = c.ID
		return m.setFlash("taken over by " + clean(c.PausedBy) + ": press r again to resume as " + clean(m.operator().Name))
	}
	return m.onConversation("resume", func(conv consent.ConversationID) error {
		if os, ok := m.svc.(OperatorService); ok {
			return os.ResumeAs(conv, m.operator())
		}
		return m.svc.Resume(conv)
	})
}

// cancel, clearFreezeOf and keepTabsOf are the engine's calls for x, u and
// o, attributed to this screen's operator like a decision.
func (m *Model) cancel(conv consent.ConversationID) error {
	if os, ok := m.svc.(OperatorService); ok {
		return os.CancelAs(conv, m.operator())
	}
	return m.svc.Cancel(conv)
}

func (m *Model) clearFreezeOf(conv consent.ConversationID) error {
	if os, ok := m.svc.(OperatorService); ok {
		return os.ClearFreezeAs(conv, m.operator())
	}
	return m.svc.ClearFreeze(conv)
}

func (m *Model) keepTabsOf(conv consent.ConversationID) error {
	if os, ok := m.svc.(OperatorService); ok {
		return os.KeepTabsAs(conv, m.operator())
	}
	return m.svc.KeepTabs(conv)
}
