package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tabwarden/tabwarden/consent"
)

// blockedText is design.md §8's wording for a page missing sub-resources.
const blockedText = "This page may be incomplete. Your organization's policy blocked a browser request."

// navItem is one stop of the selection: a tab, or a conversation that has
// no tabs yet. Operator tabs are listed but never selectable: selection
// decides which conversation is visible, and operator tabs belong to none.
type navItem struct {
	conv consent.ConversationID
	tab  consent.TabID
}

func navItems(s consent.State) []navItem {
	var items []navItem
	for _, c := range s.Conversations {
		if len(c.Tabs) == 0 {
			items = append(items, navItem{conv: c.ID})
			continue
		}
		for _, t := range c.Tabs {
			items = append(items, navItem{conv: c.ID, tab: t.ID})
		}
	}
	// An ended conversation is one stop: its tabs are the operator's, and
	// selecting it is how the operator keeps them (o).
	for _, en := range s.Ended {
		items = append(items, navItem{conv: en.ID})
	}
	return items
}

// navIndex finds sel among items: the exact tab, else the conversation's
// first stop, else -1.
func navIndex(items []navItem, sel consent.Selection) int {
	first := -1
	for i, it := range items {
		if it.conv != sel.Conversation {
			continue
		}
		if it.tab == sel.Tab {
			return i
		}
		if first < 0 {
			first = i
		}
	}
	return first
}

// inventory is the conversations → tabs tree.
type inventory struct {
	s       consent.State
	sel     consent.Selection
	details bool
	// arrowsTaken: an open panel has ↑↓, so a cut list does not offer them.
	arrowsTaken bool
	st          styles
	now         time.Time // for the countdown of ended conversations' tabs
}

func convLabel(c consent.ConversationState) string {
	name := clean(c.Name)
	if name == "" {
		return clean(string(c.ID))
	}
	return name
}

// frozenText marks a conversation whose agent lost a batch submit's answer:
// it stays frozen until the operator, having looked, presses u. The job id
// is what the operator looks up, so the key hint gives way to it first.
func frozenText(f consent.Freeze, w int) string {
	s := "    frozen: batch outcome unknown (" + clean(f.Job) + ")"
	if hint := s + " — u clears"; width(hint) <= w {
		return hint
	}
	return trunc(s, w)
}

func tabBadges(t consent.TabState) string {
	var b []string
	if t.Visible {
		b = append(b, "[visible]")
	}
	if t.Status == consent.TabRunning || t.Operation != "" {
		b = append(b, "[running]")
	}
	if t.NeedsAttention {
		b = append(b, "[needs attention]")
	}
	switch t.Status {
	case consent.TabPaused:
		b = append(b, "[paused]")
	case consent.TabLoading:
		b = append(b, "[loading]")
	case consent.TabClosed:
		b = append(b, "[closed]")
	}
	if t.Blocked || t.BlockedRequests > 0 {
		b = append(b, "[blocked]")
	}
	return strings.Join(b, " ")
}

func tabText(t consent.TabState) string {
	title, u := clean(t.Title), clean(t.URL)
	if title == "" {
		title = "(untitled)"
	}
	if u == "" || u == title {
		// Chromium titles an untitled page with its URL; once is enough.
		return title
	}
	return title + " — " + u
}

// Render shows the tree in h lines, scrolled so the selection stays in view.
func (v inventory) Render(w, h int) string { return v.section(w).render(w, h) }

// section is the tree laid out once at width w, for measuring and drawing.
func (v inventory) section(w int) section {
	lines, sel, from := v.lines(w)
	return section{len(lines), func(w, h int) string {
		shown, hidden := window(lines, sel, from, h)
		if hidden > 0 && len(shown) > 0 {
			// A cut list says so in its heading, which costs no row: at
			// 80×24 the conversations often do not all fit.
			more := countOf(hidden, "more row")
			if !v.arrowsTaken {
				more += ", ↑↓"
			}
			shown[0] = v.st.rule.Render(rule(v.heading()+" · "+more, w, "─"))
		}
		return block(shown, w, h)
	}}
}

func (v inventory) heading() string {
	if n := len(v.s.Ended); n > 0 {
		return fmt.Sprintf("Conversations (%d, %d ended)", len(v.s.Conversations), n)
	}
	return fmt.Sprintf("Conversations (%d)", len(v.s.Conversations))
}

// lines returns the tree at width w and the index of the selected line (-1
// when nothing is selected) so a short section can keep it in view.
func (v inventory) lines(w int) (out []string, selected, convRow int) {
	selected, convRow = -1, -1
	out = append(out, v.st.rule.Render(rule(v.heading(), w, "─")))
	if len(v.s.Conversations) == 0 && len(v.s.Ended) == 0 {
		text := "  No conversations yet. Agents connect over MCP."
		if slices.ContainsFunc(v.s.Activity, func(a consent.Activity) bool { return a.Conversation != "" }) {
			// Some have come and gone: "yet" would say none ever did.
			text = "  No live conversations. Agents connect over MCP."
		}
		out = append(out, trunc(text, w))
	}
	items := navItems(v.s)
	selIdx := navIndex(items, v.sel)
	var selItem navItem
	if selIdx >= 0 {
		selItem = items[selIdx]
	}
	for _, c := range v.s.Conversations {
		mark := "  "
		if c.ID == v.sel.Conversation {
			mark = "▸ "
		}
		var badges []string
		if c.Running {
			badges = append(badges, "[running]")
		}
		if c.NeedsAttention {
			badges = append(badges, "[needs attention]")
		}
		if c.Paused {
			badges = append(badges, "[paused]")
		}
		if c.Frozen != nil {
			badges = append(badges, "[frozen]")
		}
		line := mark + convLabel(c) + " (" + clean(string(c.ID)) + ")"
		if len(badges) > 0 {
			line = trunc(line, max(0, w-width(strings.Join(badges, " "))-1)) + " " + strings.Join(badges, " ")
		}
		line = trunc(line, w)
		if c.ID == v.sel.Conversation {
			convRow = len(out)
		}
		if len(c.Tabs) == 0 && selIdx >= 0 && selItem.conv == c.ID {
			selected = len(out)
			line = v.st.selected.Render(padRight(line, w))
		} else {
			line = v.st.title.Render(line)
		}
		out = append(out, line)
		if c.Frozen != nil {
			out = append(out, v.st.warn.Render(frozenText(*c.Frozen, w)))
		}
		out = append(out, grantChips(c.Scoped, v.now, w)...)
		for _, t := range c.Tabs {
			isSel := selIdx >= 0 && selItem.conv == c.ID && selItem.tab == t.ID
			out = append(out, v.tabLine(t, isSel, w))
			if isSel {
				selected = len(out) - 1
				if v.details {
					out = append(out, v.detailLines(c, t, w)...)
				}
			}
		}
	}
	// The tabs of ended conversations are operator tabs, listed under the
	// conversation they close with rather than twice.
	ending := map[consent.TabID]bool{}
	for _, en := range v.s.Ended {
		mark := "  "
		if en.ID == v.sel.Conversation {
			mark = "▸ "
		}
		line := trunc(mark+clean(en.Name)+" ("+clean(string(en.ID))+")", max(0, w-len(" [ended]"))) + " [ended]"
		if selIdx >= 0 && selItem.conv == en.ID {
			selected = len(out)
			line = v.st.selected.Render(padRight(trunc(line, w), w))
		} else {
			line = v.st.title.Render(trunc(line, w))
		}
		out = append(out, line)
		out = append(out, v.st.warn.Render(trunc("    "+closeText(en.CloseAt.Sub(v.now)), w)))
		for _, id := range en.Tabs {
			ending[id] = true
			for _, t := range v.s.OperatorTabs {
				if t.ID == id {
					out = append(out, v.tabLine(t, false, w))
				}
			}
		}
	}
	var operator []consent.TabState
	for _, t := range v.s.OperatorTabs {
		if !ending[t.ID] {
			operator = append(operator, t)
		}
	}
	if len(operator) > 0 {
		out = append(out, v.st.rule.Render(rule(fmt.Sprintf("Operator tabs (%d, agents cannot touch)", len(operator)), w, "─")))
		// Every Chromium starts with a blank tab the operator never opened;
		// listed one by one they read like pages to look at. Blank, quiet
		// ones fold into one count line; any with a badge stays listed.
		blank := 0
		for _, t := range operator {
			if blankURL(t.URL) && tabBadges(t) == "" {
				blank++
				continue
			}
			out = append(out, v.tabLine(t, false, w))
		}
		switch {
		case blank == 1:
			out = append(out, trunc("    1 blank tab (about:blank)", w))
		case blank > 1:
			out = append(out, trunc(fmt.Sprintf("    %d blank tabs (about:blank)", blank), w))
		}
	}
	return out, selected, convRow
}

// closeText is the countdown under an ended conversation: when its tabs
// close, and the key that keeps them.
func closeText(left time.Duration) string {
	if left <= 0 {
		return "tabs closing…"
	}
	s := int((left + time.Second - 1) / time.Second)
	return fmt.Sprintf("tabs close in %d:%02d · o keep", s/60, s%60)
}

func (v inventory) tabLine(t consent.TabState, sel bool, w int) string {
	mark := "    "
	if sel {
		mark = "  › "
	}
	head := mark + clean(string(t.ID))
	b := tabBadges(t)
	// A narrow column drops the badges that say least ([visible], then
	// [running]) rather than cut one in half: [needs attention] and
	// [blocked] are why the operator looks.
	for _, quiet := range []func(*consent.TabState){
		func(t *consent.TabState) { t.Visible = false },
		func(t *consent.TabState) {
			if t.Status == consent.TabRunning {
				t.Status = ""
			}
			t.Operation = ""
		},
	} {
		if width(head)+1+width(b) <= w {
			break
		}
		quiet(&t)
		b = tabBadges(t)
	}
	if b != "" {
		head += " " + b
	}
	line := trunc(head+"  "+tabText(t), w)
	if sel {
		return v.st.selected.Render(padRight(line, w))
	}
	if t.Blocked || t.NeedsAttention {
		return v.st.warn.Render(line)
	}
	return line
}

func (v inventory) detailLines(c consent.ConversationState, t consent.TabState, w int) []string {
	b := blockWriter{w: w - 6}
	b.field("url", orDash(clean(t.URL)))
	b.field("title", orDash(clean(t.Title)))
	status := string(t.Status)
	if t.Operation != "" {
		// "running · running act" said it twice.
		status = "running " + clean(t.Operation)
		if t.Status != consent.TabRunning {
			status = string(t.Status) + " · " + status
		}
	}
	b.field("status", orDash(status))
	if t.OpenerTabID != "" {
		b.field("opened by", clean(string(t.OpenerTabID)))
	}
	// The conversation's grants name each tab's navigation grant too;
	// the tab's own list is shown only when they do not.
	if len(t.NavigationGrant) > 0 && len(c.Grants) == 0 {
		b.field("nav grants", clean(strings.Join(t.NavigationGrant, ", ")))
	}
	if len(c.Grants) > 0 {
		b.field("grants", clean(strings.Join(c.Grants, ", ")))
	}
	if t.Blocked || t.BlockedRequests > 0 {
		b.field("blocked", countOf(t.BlockedRequests, "request")+". "+blockedText)
	}
	out := make([]string, 0, len(b.lines))
	for _, l := range b.lines {
		out = append(out, trunc("      "+l, w))
	}
	return out
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

// window cuts lines to h, keeping line keep (and the heading) in view, and
// line from too (the selected tab's conversation) when both fit; it says
// how many lines it left out.
func window(lines []string, keep, from, h int) (shown []string, hidden int) {
	if len(lines) <= h {
		return lines, 0
	}
	if h <= 0 {
		return nil, len(lines)
	}
	if keep < h {
		return lines[:h], len(lines) - h
	}
	// Keep the heading, then scroll so keep is the last visible line, or
	// further up to show from: a tab without its conversation's name
	// does not say whose it is.
	start := keep - (h - 1) + 1
	if from >= 1 && from < start && keep-from+1 <= h-1 {
		start = from
	}
	return append([]string{lines[0]}, lines[start:start+h-1]...), len(lines) - h
}
