package consent

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/tabwarden/tabwarden/consent/audit"
)

// DefaultEndedTabGrace is how long the tabs of an ended conversation stay
// open before the engine has them closed (docs/decisions.md).
const DefaultEndedTabGrace = 2 * time.Minute

// EndedConversation is a conversation that ended while it owned tabs. The
// tabs are operator tabs from the moment it ended (no agent can touch
// them); at CloseAt the engine asks the browser to close them
// (EventCloseTabs) unless the operator keeps them first (KeepTabs).
type EndedConversation struct {
	ID      ConversationID
	Name    string
	EndedAt time.Time
	CloseAt time.Time
	Tabs    []TabID // creation order
}

// ending is an ended conversation's grace: engine state, guarded by mu.
type ending struct {
	id      ConversationID
	name    string
	seq     uint64
	endedAt time.Time
	closeAt time.Time
	tabs    map[TabID]struct{}
	stop    func() bool
	gen     uint64
}

// afterFunc runs f after d on the engine's timer source.
func (e *Engine) afterFunc(d time.Duration, f func()) func() bool {
	if e.cfg.AfterFunc != nil {
		return e.cfg.AfterFunc(d, f)
	}
	return time.AfterFunc(d, f).Stop
}

// startGraceLocked schedules the close of tabs, which conversation c owned
// until it ended just now.
func (e *Engine) startGraceLocked(c *conv, tabs []TabID) {
	if len(tabs) == 0 || e.closed {
		return
	}
	now := e.now()
	en := &ending{id: c.id, name: c.name, seq: c.seq, endedAt: now, closeAt: now.Add(e.cfg.EndedTabGrace), tabs: map[TabID]struct{}{}}
	for _, id := range tabs {
		en.tabs[id] = struct{}{}
	}
	e.graceGen++
	en.gen = e.graceGen
	gen := en.gen
	en.stop = e.afterFunc(e.cfg.EndedTabGrace, func() { e.graceOver(c.id, gen) })
	e.ended[c.id] = en
	e.addActivityLocked(c.id, closeNotice(len(tabs), clock(e.cfg.EndedTabGrace)), false)
}

// closeNotice is the activity line of an ended conversation's tabs:
// "its 2 tabs close in 2:00 unless you keep them (o)".
func closeNotice(n int, in string) string {
	if n == 1 {
		return "its 1 tab closes in " + in + " unless you keep it (o)"
	}
	return "its " + countOf(n, "tab") + " close in " + in + " unless you keep them (o)"
}

// countOf is "1 tab", "2 tabs".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// graceOver closes what is left of an ended conversation's tabs.
func (e *Engine) graceOver(id ConversationID, gen uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.ended[id]
	if e.closed || en == nil || en.gen != gen {
		return
	}
	e.dropEndingLocked(en)
	tabs := e.endingTabsLocked(en)
	if len(tabs) == 0 {
		e.commitLocked()
		return
	}
	e.announceLocked(Event{Kind: EventCloseTabs, Conversation: id, Tabs: tabs},
		audit.Record{Kind: audit.KindSession, By: "engine", Note: fmt.Sprintf("closing %s of the ended conversation after %s", countOf(len(tabs), "tab"), clock(e.cfg.EndedTabGrace))},
		fmt.Sprintf("closing %s of ended %s", countOf(len(tabs), "tab"), en.name), false)
}

// KeepTabs keeps the tabs of the ended conversation id open: they stay
// operator tabs and are never closed by the engine. Only the operator calls
// it. ErrUnknownConversation when id has no tabs waiting to close.
func (e *Engine) KeepTabs(id ConversationID) error { return e.KeepTabsAs(id, LocalOperator) }

// KeepTabsAs is KeepTabs by op, attributed like a decision.
func (e *Engine) KeepTabsAs(id ConversationID, op Operator) error {
	op = op.orLocal()
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.ended[id]
	if en == nil {
		return ErrUnknownConversation
	}
	en.stop()
	e.dropEndingLocked(en)
	n := len(e.endingTabsLocked(en))
	e.announceLocked(Event{Kind: EventTabsKept, Conversation: id},
		withOperator(audit.Record{Kind: audit.KindSession, By: "operator", Note: fmt.Sprintf("kept %s of the ended conversation", countOf(n, "tab"))}, op),
		fmt.Sprintf("kept %s of ended %s: they stay as operator tabs", countOf(n, "tab"), en.name), false)
	return nil
}

// dropEndingLocked forgets en and moves the selection off it.
func (e *Engine) dropEndingLocked(en *ending) {
	delete(e.ended, en.id)
	if e.sel.Conversation == en.id {
		next := Selection{}
		if first := e.sortedConvsLocked(); len(first) > 0 {
			next = Selection{Conversation: first[0].id, Tab: e.pickTabLocked(first[0].id)}
		}
		e.setSelectionLocked(next)
	}
}

// endingTabsLocked lists en's tabs that are still open and still the
// operator's, in creation order.
func (e *Engine) endingTabsLocked(en *ending) []TabID {
	var ts []*tab
	for id := range en.tabs {
		if t, ok := e.tabs[id]; ok && t.info.Conversation == "" {
			ts = append(ts, t)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].seq < ts[j].seq })
	out := make([]TabID, len(ts))
	for i, t := range ts {
		out[i] = t.info.ID
	}
	return out
}

// endedTabGoneLocked takes a closed (or re-owned) tab out of every grace;
// a grace with no tab left ends.
func (e *Engine) endedTabGoneLocked(id TabID) {
	for _, en := range e.ended {
		if _, ok := en.tabs[id]; !ok {
			continue
		}
		delete(en.tabs, id)
		if len(e.endingTabsLocked(en)) == 0 {
			en.stop()
			e.dropEndingLocked(en)
		}
	}
}

// endedLocked is the snapshot of every grace, oldest conversation first.
func (e *Engine) endedLocked() []EndedConversation {
	ens := make([]*ending, 0, len(e.ended))
	for _, en := range e.ended {
		ens = append(ens, en)
	}
	sort.Slice(ens, func(i, j int) bool { return ens[i].seq < ens[j].seq })
	var out []EndedConversation
	for _, en := range ens {
		if tabs := e.endingTabsLocked(en); len(tabs) > 0 {
			out = append(out, EndedConversation{ID: en.id, Name: en.name, EndedAt: en.endedAt, CloseAt: en.closeAt, Tabs: tabs})
		}
	}
	return out
}

// clock formats d as m:ss, the way the TUI counts down.
func clock(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int((d + time.Second - 1) / time.Second)
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
