package consent

// Select moves the operator's focus to conversation id; an empty tabID
// picks the conversation's tab with the oldest pending review, else its
// first tab. Listeners get EventSelect so the browser brings the tab to
// front.
func (e *Engine) Select(id ConversationID, tabID TabID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if id != "" {
		if _, ok := e.convs[id]; !ok {
			if e.ended[id] == nil {
				return
			}
			// An ended conversation is selected as a whole: its tabs are
			// the operator's, and selecting one would make it "visible".
			e.setSelectionLocked(Selection{Conversation: id})
			e.commitLocked()
			return
		}
	}
	if tabID == "" {
		tabID = e.pickTabLocked(id)
	} else if t, ok := e.tabs[tabID]; !ok || t.info.Conversation != id {
		return
	}
	e.setSelectionLocked(Selection{Conversation: id, Tab: tabID})
	e.commitLocked()
}

// FocusTab makes tabID the selected tab if its conversation is the selected
// one (a foreground open in the visible conversation); otherwise it does
// nothing, so an agent can never switch the operator's visible conversation.
func (e *Engine) FocusTab(tabID TabID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.tabs[tabID]
	if !ok || t.info.Conversation == "" || t.info.Conversation != e.sel.Conversation {
		return
	}
	e.setSelectionLocked(Selection{Conversation: e.sel.Conversation, Tab: tabID})
	e.commitLocked()
}

// pickTabLocked chooses what Select(conv, "") shows: the tab with the
// oldest pending review, else the conversation's first tab.
func (e *Engine) pickTabLocked(id ConversationID) TabID {
	if id == "" {
		return ""
	}
	for _, r := range e.queue {
		if r.Conversation == id {
			return r.Tab
		}
	}
	var first *tab
	for _, t := range e.tabs {
		if t.info.Conversation == id && (first == nil || t.seq < first.seq) {
			first = t
		}
	}
	if first == nil {
		return ""
	}
	return first.info.ID
}

// setSelectionLocked tells listeners when the tab to bring to front changes.
func (e *Engine) setSelectionLocked(s Selection) {
	if s == e.sel {
		return
	}
	old := e.sel
	e.sel = s
	if s.Tab != "" && s.Tab != old.Tab {
		e.emitLocked(Event{Kind: EventSelect, Conversation: s.Conversation, Tab: s.Tab})
	}
}

func (e *Engine) visibleLocked(t *tab) bool {
	return t != nil && t.info.Conversation != "" &&
		t.info.Conversation == e.sel.Conversation && t.info.ID == e.sel.Tab
}
