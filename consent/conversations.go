package consent

import (
	"sort"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

type conv struct {
	id     ConversationID
	name   string
	seq    uint64
	paused bool
	// pausedBy is who took the conversation over (while paused).
	pausedBy Operator
	// pauseNote is what the console's wiring says the operator does during
	// this take-over (SetPauseNote); it ends with the take-over.
	pauseNote string
	// epoch fences approvals against revocation: bumped by take-over,
	// cancel and removal.
	epoch  uint64
	grants grants
	// freeze is set while the agent cannot know a batch's outcome (freeze.go).
	freeze *Freeze
}

type tab struct {
	info  TabInfo
	seq   uint64
	epoch uint64 // bumped when the tab changes owner or closes
}

// AddConversation registers a conversation. The first conversation added
// becomes the selection when nothing is selected.
func (e *Engine) AddConversation(id ConversationID, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if id == "" {
		return
	}
	if c, ok := e.convs[id]; ok {
		c.name = name
		e.names[id] = name
		e.commitLocked()
		return
	}
	if en := e.ended[id]; en != nil {
		// The id is back: the tabs of its end stay the operator's.
		en.stop()
		e.dropEndingLocked(en)
	}
	e.seq++
	e.convs[id] = &conv{id: id, name: name, seq: e.seq, grants: newGrants()}
	e.names[id] = name
	if e.sel == (Selection{}) {
		e.setSelectionLocked(Selection{Conversation: id, Tab: e.pickTabLocked(id)})
	}
	e.commitLocked()
}

// RemoveConversation ends a conversation: its running op is cancelled, its
// pending reviews resolve canceled, its grants are dropped and its tabs
// become operator tabs, which close after Config.EndedTabGrace unless the
// operator keeps them (State.Ended, KeepTabs, EventCloseTabs).
func (e *Engine) RemoveConversation(id ConversationID) { e.EndConversation(id, "") }

// EndConversation is RemoveConversation for a caller that is gone, with
// reason (e.g. "agent token x revoked"): its pending reviews are withdrawn
// and audited with the reason, and its ops fail canceled saying it.
func (e *Engine) EndConversation(id ConversationID, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.convs[id]
	if !ok {
		return
	}
	c.epoch++
	msg := "conversation ended"
	if reason != "" {
		msg += ": " + reason
	}
	why := errcode.Errorf(errcode.Canceled, errcode.NextNone, "%s", msg)
	e.cancelOpsLocked(id, why)
	e.resolveConvLocked(id, outcome{err: why, decision: "canceled", by: "engine", note: "withdrawn: " + msg})
	c.grants = newGrants()
	e.revokeConvScopedLocked(id, msg)
	delete(e.convs, id)
	var handed []TabID
	for _, t := range e.tabs {
		if t.info.Conversation == id {
			t.info.Conversation = ""
			t.epoch++
			handed = append(handed, t.info.ID)
		}
	}
	e.addActivityLocked(id, "conversation ended: "+c.name, false)
	e.startGraceLocked(c, handed)
	if e.sel.Conversation == id {
		next := Selection{}
		if first := e.sortedConvsLocked(); len(first) > 0 {
			next = Selection{Conversation: first[0].id, Tab: e.pickTabLocked(first[0].id)}
		}
		e.setSelectionLocked(next)
	}
	e.commitLocked()
}

// PutTab adds or updates a tab as the browser reports it. A tab with an
// empty Conversation is an operator tab.
func (e *Engine) PutTab(ti TabInfo) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ti.ID == "" {
		return
	}
	if ti.Conversation != "" {
		if _, ok := e.convs[ti.Conversation]; !ok {
			// An unknown owner cannot own anything: keep the tab untouchable.
			// A tab reported for a conversation that ended (a late popup)
			// closes with the others unless the operator keeps them.
			if en := e.ended[ti.Conversation]; en != nil {
				en.tabs[ti.ID] = struct{}{}
			}
			ti.Conversation = ""
		} else {
			e.endedTabGoneLocked(ti.ID)
		}
	}
	t, ok := e.tabs[ti.ID]
	if !ok {
		e.seq++
		t = &tab{info: ti, seq: e.seq}
		e.tabs[ti.ID] = t
	} else if t.info.Conversation != ti.Conversation {
		// Ownership moved: nothing the old owner was allowed may carry over.
		e.dropTabLocked(t, errcode.Errorf(errcode.WrongConversation, errcode.NextListTabs, "tab %s changed owner", ti.ID), "canceled")
		t.epoch++
	}
	t.info = ti
	if ti.Conversation != "" && e.sel.Conversation == ti.Conversation && e.sel.Tab == "" {
		e.setSelectionLocked(Selection{Conversation: ti.Conversation, Tab: ti.ID})
	}
	e.commitLocked()
}

// RemoveTab forgets a closed tab: its navigation grants are revoked, its
// pending reviews resolve tab_closed and a running op on it is cancelled.
func (e *Engine) RemoveTab(id TabID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.tabs[id]
	if !ok {
		return
	}
	e.dropTabLocked(t, errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "tab %s was closed", id), "tab_closed")
	t.epoch++
	delete(e.tabs, id)
	e.endedTabGoneLocked(id)
	e.emitLocked(Event{Kind: EventTabRemoved, Conversation: t.info.Conversation, Tab: id})
	if e.sel.Tab == id {
		e.setSelectionLocked(Selection{Conversation: e.sel.Conversation, Tab: e.pickTabLocked(e.sel.Conversation)})
	}
	e.commitLocked()
}

// dropTabLocked revokes what the tab's owner holds on it: navigation
// grants, pending reviews and the op running on it.
func (e *Engine) dropTabLocked(t *tab, why *errcode.Error, decision string) {
	if c, ok := e.convs[t.info.Conversation]; ok {
		c.grants.revokeTab(t.info.ID)
		reason := "its tab " + string(t.info.ID) + " closed"
		if decision != "tab_closed" {
			reason = "its tab " + string(t.info.ID) + " changed owner"
		}
		e.revokeScopedLocked(func(g *scopedGrant) bool { return g.Conversation == c.id && g.Tab == t.info.ID }, reason, Operator{})
	}
	for _, r := range append([]*review(nil), e.queue...) {
		if r.tab != t {
			continue
		}
		out := outcome{err: why, decision: decision, by: "engine"}
		if r.op != nil && r.op.reason == nil && r.op.ctx.Err() != nil {
			// The caller went first and the tab closed because of it (a
			// browser_open whose caller died closes its new tab): the
			// review is withdrawn for the caller's reason, as it would
			// have been a moment later.
			w := r.op.whyLocked()
			out = outcome{err: w, decision: decisionFor(w.Code), by: "engine", note: "withdrawn: " + w.Message}
		}
		e.resolveLocked(r, out)
	}
	if op := e.tabOps[t.info.ID]; op != nil {
		op.cancelLocked(why)
	}
}

// Owner returns the conversation owning tab id (empty for operator tabs)
// and whether the tab is known.
func (e *Engine) Owner(id TabID) (ConversationID, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.tabs[id]
	if !ok {
		return "", false
	}
	return t.info.Conversation, true
}

func (e *Engine) sortedConvsLocked() []*conv {
	cs := make([]*conv, 0, len(e.convs))
	for _, c := range e.convs {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].seq < cs[j].seq })
	return cs
}
