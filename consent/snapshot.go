package consent

import "sort"

// Snapshot returns the current state for rendering.
func (e *Engine) Snapshot() State {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := State{
		Profile:     e.eff,
		ReviewDelay: e.cfg.ReviewDelay,
		Info:        e.info,
		Selection:   e.sel,
		Activity:    append([]Activity(nil), e.activity...),
		Ended:       e.endedLocked(),
		Grants:      e.scopedSnapshotLocked(),
		Now:         e.now(),
		Operators:   e.operatorsLocked(),
	}
	waiting := map[TabID]bool{} // tabs with a queued, unfocused review
	for _, r := range e.queue {
		q := r.copyOut()
		if r != e.focused {
			waiting[r.Tab] = true
			q.QueueDeadline = e.queueDeadlineLocked(r)
		}
		st.Queue = append(st.Queue, q)
	}
	if e.focused != nil {
		f := e.focused.copyOut()
		st.Focused = &f
	}
	tabs := make([]*tab, 0, len(e.tabs))
	for _, t := range e.tabs {
		tabs = append(tabs, t)
	}
	sort.Slice(tabs, func(i, j int) bool { return tabs[i].seq < tabs[j].seq })
	for _, c := range e.sortedConvsLocked() {
		cs := ConversationState{ID: c.id, Name: c.name, Paused: c.paused, PausedBy: c.pausedBy.Name, PauseNote: c.pauseNote, Grants: c.grants.describe()}
		for _, g := range st.Grants {
			if g.Conversation == c.id {
				cs.Scoped = append(cs.Scoped, g)
			}
		}
		if c.freeze != nil {
			f := *c.freeze
			cs.Frozen = &f
		}
		for _, t := range tabs {
			if t.info.Conversation != c.id {
				continue
			}
			ts := e.tabStateLocked(t, c, waiting[t.info.ID])
			cs.NeedsAttention = cs.NeedsAttention || ts.NeedsAttention
			cs.Running = cs.Running || ts.Operation != ""
			cs.Tabs = append(cs.Tabs, ts)
		}
		for op := range e.ops {
			if op.conv == c.id {
				cs.Running = true
			}
		}
		st.Conversations = append(st.Conversations, cs)
	}
	for _, t := range tabs {
		if t.info.Conversation == "" {
			st.OperatorTabs = append(st.OperatorTabs, e.tabStateLocked(t, nil, false))
		}
	}
	return st
}

func (e *Engine) tabStateLocked(t *tab, c *conv, waiting bool) TabState {
	ts := TabState{
		TabInfo:        t.info,
		Status:         TabIdle,
		Visible:        e.visibleLocked(t),
		NeedsAttention: waiting,
		Blocked:        t.info.BlockedRequests > 0,
	}
	if t.info.Loading {
		ts.Status = TabLoading
	}
	if op := e.tabOps[t.info.ID]; op != nil && c != nil && op.conv == c.id {
		ts.Status = TabRunning
		ts.Operation = op.name
	}
	if c != nil {
		if c.paused {
			ts.Status = TabPaused
		}
		ts.NavigationGrant = c.grants.tabOrigins(t.info.ID)
	}
	return ts
}

// Changes returns a channel that receives a value after any state change.
// Delivery coalesces: one pending signal stands for any number of changes;
// read Snapshot after it. The returned func unsubscribes.
func (e *Engine) Changes() (<-chan struct{}, func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch := make(chan struct{}, 1)
	id := e.nextSub
	e.nextSub++
	e.subs[id] = ch
	return ch, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		delete(e.subs, id)
	}
}

// SetInfo replaces the header information.
func (e *Engine) SetInfo(info Info) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.info = info
	e.commitLocked()
}
