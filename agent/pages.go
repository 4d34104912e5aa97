package agent

import (
	"context"
	"sync"

	"github.com/tabwarden/tabwarden/browser/dom"
	"github.com/tabwarden/tabwarden/consent"
)

// pageStates keeps one dom.Tab (observations, refs) per task tab. Take-over,
// resume, cancel and tab close make every observation of the affected tabs
// meaningless, so they are invalidated or dropped on the engine's events.
type pageStates struct {
	mu     sync.Mutex
	tabs   map[consent.TabID]*dom.Tab
	owners map[consent.TabID]consent.ConversationID
	stop   func()
}

func newPageStates(eng *consent.Engine) *pageStates {
	ps := &pageStates{tabs: map[consent.TabID]*dom.Tab{}, owners: map[consent.TabID]consent.ConversationID{}}
	ps.stop = eng.Listen(ps.onEvent)
	return ps
}

func (ps *pageStates) close() { ps.stop() }

func (ps *pageStates) onEvent(ev consent.Event) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	switch ev.Kind {
	case consent.EventTakeOver, consent.EventResume, consent.EventCancel:
		for id, owner := range ps.owners {
			if owner == ev.Conversation {
				ps.tabs[id].Invalidate()
			}
		}
	case consent.EventTabRemoved:
		if t, ok := ps.tabs[ev.Tab]; ok {
			t.Invalidate()
			delete(ps.tabs, ev.Tab)
			delete(ps.owners, ev.Tab)
		}
	}
}

// get returns the tab's dom state, creating it on first use.
func (ps *pageStates) get(ctx context.Context, b Browser, conv consent.ConversationID, id consent.TabID) (*dom.Tab, error) {
	ps.mu.Lock()
	t, ok := ps.tabs[id]
	owner := ps.owners[id]
	ps.mu.Unlock()
	if ok && owner == conv {
		return t, nil
	}
	page, err := b.Page(ctx, conv, id)
	if err != nil {
		return nil, err
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if t, ok := ps.tabs[id]; ok && ps.owners[id] == conv {
		return t, nil
	}
	t = dom.NewTab(page, string(id), dom.Options{})
	ps.tabs[id] = t
	ps.owners[id] = conv
	return t, nil
}
