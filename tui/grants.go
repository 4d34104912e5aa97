package tui

import (
	"errors"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/tabwarden/tabwarden/consent"
)

// Scoped grants on screen (design.md §4): `s` on a review, a chip per
// grant under its conversation's row with its remaining time, and the `G`
// list, where X revokes the selected grant. Every screen (SSH ones too)
// shows and revokes them; the engine attributes each to its operator.

// GrantService is the part of the engine that revokes a scoped grant.
// *consent.Engine satisfies it; without it `G` only lists.
type GrantService interface {
	RevokeGrant(id string, by consent.Operator) error
}

var _ GrantService = (*consent.Engine)(nil)

// grantsPanel is the `G` list's state: the selected grant, by id, so a
// grant ending above it does not move the selection onto another one.
type grantsPanel struct {
	sel string
}

// decideScoped answers the focused review with `s`: allowed, and this
// class of step on this origin in this conversation for the grant window.
// The key-ahead guard applies as to `a`; a step that cannot be granted
// is refused with its reason and nothing is decided.
func (m *Model) decideScoped() tea.Cmd {
	f := m.state.Focused
	if f == nil {
		return m.setFlash("no review on screen")
	}
	os, ok := m.svc.(OperatorService)
	if !ok {
		return m.setFlash("s is not available on this screen")
	}
	var seen time.Time
	if f.ID == m.seenID {
		seen = m.seenAt
	}
	err := os.DecideAs(consent.Decision{Review: f.ID, Approve: true, Scoped: true, By: m.operator(), SeenAt: seen})
	var ng *consent.NotGrantableError
	switch {
	case err == nil:
		text := "allowed for a while"
		if f.Scope != nil {
			text = "allowed for a while: " + clean(f.Scope.Text)
		}
		return m.setFlash(text)
	case errors.As(err, &ng):
		return m.setFlash(clean(err.Error()))
	case errors.Is(err, consent.ErrTooEarly):
		return m.setFlash(flashTooEarly)
	case errors.Is(err, consent.ErrNoSuchReview):
		return m.setFlash("that review was already resolved")
	case errors.Is(err, consent.ErrNotShown):
		return m.setFlash("that review is not on screen")
	}
	return m.setFlash("decision failed: " + clean(err.Error()))
}

// openGrants toggles the `G` list.
func (m *Model) openGrants() tea.Cmd {
	if m.grants != nil {
		m.grants = nil
		return nil
	}
	p := &grantsPanel{}
	if gs := m.state.Grants; len(gs) > 0 {
		p.sel = gs[0].ID
	}
	m.grants = p
	return nil
}

// grantIndex is the selected grant's place in the list, 0 when it is gone.
func grantIndex(gs []consent.ScopedGrant, id string) int {
	for i, g := range gs {
		if g.ID == id {
			return i
		}
	}
	return 0
}

// grantsKey handles a key while the `G` list is open: ↑/↓ pick a grant,
// X revokes it, esc or G closes. Every other key works as usual.
func (m *Model) grantsKey(k tea.KeyPressMsg) (tea.Cmd, bool) {
	p := m.grants
	gs := m.state.Grants
	i := grantIndex(gs, p.sel)
	switch k.String() {
	case "esc", "G":
		m.grants = nil
		return nil, true
	case "up":
		if len(gs) > 0 {
			p.sel = gs[max(i-1, 0)].ID
		}
		return nil, true
	case "down":
		if len(gs) > 0 {
			p.sel = gs[min(i+1, len(gs)-1)].ID
		}
		return nil, true
	case "X":
		if len(gs) == 0 {
			return m.setFlash("no grant to revoke"), true
		}
		g := gs[i]
		rs, ok := m.svc.(GrantService)
		if !ok {
			return m.setFlash("grants cannot be revoked from this screen"), true
		}
		if err := rs.RevokeGrant(g.ID, m.operator()); err != nil {
			return m.setFlash("revoking grant " + clean(g.ID) + " failed: " + clean(err.Error())), true
		}
		if len(gs) > 1 {
			p.sel = gs[min(i+1, len(gs)-1)].ID
			if i == len(gs)-1 {
				p.sel = gs[i-1].ID
			}
		}
		return m.setFlash("revoked grant " + clean(g.ID) + ": " + clean(string(g.Class)) + " on " + clean(g.Origin) + " asks again"), true
	}
	return nil, false
}

// leftText is a grant's remaining time as m:ss.
func leftText(expires, now time.Time) string {
	left := expires.Sub(now)
	if left <= 0 {
		return "0:00"
	}
	s := int((left + time.Second - 1) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// grantChips is the line(s) under a conversation's row: one chip per
// grant with its class, origin and remaining time.
func grantChips(gs []consent.ScopedGrant, now time.Time, w int) []string {
	if len(gs) == 0 {
		return nil
	}
	// A chip wraps whole ("[fill http://… 14:56]" once broke after its
	// origin): its own spaces are no-break while the line wraps.
	const nbsp = "\u00a0"
	chips := make([]string, 0, len(gs))
	for _, g := range gs {
		chips = append(chips, "["+strings.Join([]string{clean(string(g.Class)), clean(g.Origin), leftText(g.Expires, now)}, nbsp)+"]")
	}
	text := "s-grants: " + strings.Join(chips, " ") + " · G"
	var out []string
	for _, l := range wrap(text, max(w-4, 1)) {
		out = append(out, trunc("    "+strings.ReplaceAll(l, nbsp, " "), w))
	}
	return out
}

// grantsBox draws the `G` list.
type grantsBox struct {
	gs  []consent.ScopedGrant
	sel string
	now time.Time
	st  styles
}

func (g grantsBox) Render(w, h int) string { return block(g.lines(w), w, h) }

func (g grantsBox) lines(w int) []string {
	out := []string{g.st.review.Render(rule(fmt.Sprintf("Scoped grants (%d) · G or esc closes", len(g.gs)), w, "═"))}
	if len(g.gs) == 0 {
		out = append(out, trunc("  no active grants: s on a read or action review gives one", w))
	}
	i := grantIndex(g.gs, g.sel)
	for j, s := range g.gs {
		mark := "  "
		if j == i {
			mark = "▸ "
		}
		conv := clean(s.ConversationName)
		if conv == "" {
			conv = clean(string(s.Conversation))
		}
		by := clean(s.By.Name)
		// Two lines a grant: what it allows where (the origin whole), then
		// whose it is and how much of it is left.
		line := fmt.Sprintf("%s%s %s on %s", mark, clean(s.ID), clean(string(s.Class)), clean(s.Origin))
		more := fmt.Sprintf("    %s · %s · %s left · by %s", conv, countOf(s.Uses, "use"), leftText(s.Expires, g.now), by)
		if j == i {
			out = append(out, g.st.selected.Render(padRight(trunc(line, w), w)))
		} else {
			out = append(out, trunc(line, w))
		}
		out = append(out, trunc(more, w))
	}
	if len(g.gs) == 0 {
		return out // nothing to select or revoke
	}
	return append(out, wrap("↑↓ select · X revoke the selected grant (its steps ask again)", w)...)
}

func (m Model) grantsSection(w int) section {
	if m.grants == nil {
		return section{}
	}
	g := grantsBox{gs: m.state.Grants, sel: m.grants.sel, now: m.now, st: m.st}
	return section{len(g.lines(w)), g.Render}
}
