package browser

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// tab is one page target as the console knows it. Fields are guarded by
// registry.mu.
type tab struct {
	id      consent.TabID
	target  proto.TargetTargetID
	conv    consent.ConversationID // empty: operator tab
	opener  consent.TabID
	popup   bool
	session proto.TargetSessionID
	// following: the session has the frames followed and lifecycle
	// events on (attach), which end "loading".
	following bool
	url       string
	title     string
	loading   bool
	blocked   int // policy-failed sub-resources of the current document
	closed    bool
	// denial is why the last main-frame request was refused (consent or
	// policy); Navigate reports it instead of Chromium's net error.
	denial error
	seq    uint64 // creation order, for stable listings

	// Lifecycle of the newest main-frame document, fed by the event loop
	// so Navigate can wait for its load without a subscription race.
	loader    proto.NetworkLoaderID
	lifecycle map[proto.PageLifecycleEventName]bool
	lifeCh    chan struct{} // closed and replaced on each lifecycle event
	// navs counts main-frame document requests the hook has seen; a new
	// one means the page is already navigating away (a script or meta
	// refresh), and its load may never come.
	navs uint64
	// agentNavs counts Navigate/History calls in flight on this tab; the
	// hook refuses their requests once the conversation is taken over.
	agentNavs int
	// sent counts main-frame requests the hook let go to the site: once it
	// moves, a navigation that then fails may have reached the site.
	sent uint64
	// handle is the agent's handle on the tab (handle.go), made on first
	// use; it ends when the tab closes.
	handle *Handle
}

func (t *tab) info() consent.TabInfo {
	return consent.TabInfo{
		ID:              t.id,
		Conversation:    t.conv,
		URL:             t.url,
		Title:           t.title,
		OpenerTabID:     t.opener,
		Loading:         t.loading,
		BlockedRequests: t.blocked,
	}
}

// registry maps the console's tab ids to targets. Closed tabs stay in byID
// so a later use is tab_closed rather than "unknown".
type registry struct {
	mu       sync.Mutex
	byID     map[consent.TabID]*tab
	byTarget map[proto.TargetTargetID]*tab
	bySess   map[proto.TargetSessionID]*tab
	// creating counts NewTab calls between Target.createTarget and claim.
	// While it is positive an unknown opener-less target may be ours, so it
	// waits in unclaimed instead of becoming an operator tab.
	creating int
	// pending counts each conversation's NewTab calls in flight, so that
	// concurrent opens cannot pass tab_limit together.
	pending   map[consent.ConversationID]int
	unclaimed map[proto.TargetTargetID]proto.TargetTargetInfo
	// guarded maps the upload guard's auto-attached page sessions to
	// their targets (file chooser events arrive on them).
	guarded map[proto.TargetSessionID]proto.TargetTargetID
	// frames maps the sub-frames Chromium reported on a tab's session
	// or on one of its out-of-process frames' (Page.frameAttached, or the
	// frame's own target attaching) to that tab's target.
	frames map[proto.PageFrameID]proto.TargetTargetID
	// oopifs maps the sessions of a task tab's out-of-process frames
	// (auto-attached, at any depth) to that tab's target.
	oopifs map[proto.TargetSessionID]proto.TargetTargetID
	// unfollowed are the task tabs with an out-of-process frame that
	// could not be followed: a frame nobody placed may be theirs.
	unfollowed map[proto.TargetTargetID]bool
	seq        uint64
	front      consent.TabID // the tab the operator selected last
}

func (r *registry) init() {
	r.byID = map[consent.TabID]*tab{}
	r.byTarget = map[proto.TargetTargetID]*tab{}
	r.bySess = map[proto.TargetSessionID]*tab{}
	r.unclaimed = map[proto.TargetTargetID]proto.TargetTargetInfo{}
	r.pending = map[consent.ConversationID]int{}
	r.guarded = map[proto.TargetSessionID]proto.TargetTargetID{}
	r.frames = map[proto.PageFrameID]proto.TargetTargetID{}
	r.oopifs = map[proto.TargetSessionID]proto.TargetTargetID{}
	r.unfollowed = map[proto.TargetTargetID]bool{}
}

func newTabID() consent.TabID {
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // the runtime guarantees it never fails
	}
	return consent.TabID("tab_" + hex.EncodeToString(b[:]))
}

// add registers a target; r.mu must be held.
func (r *registry) add(info proto.TargetTargetInfo, conv consent.ConversationID, opener consent.TabID) *tab {
	r.seq++
	t := &tab{id: newTabID(), target: info.TargetID, conv: conv, opener: opener, popup: opener != "",
		url: info.URL, title: info.Title, seq: r.seq, lifeCh: make(chan struct{})}
	for r.byID[t.id] != nil {
		t.id = newTabID()
	}
	r.byID[t.id] = t
	r.byTarget[info.TargetID] = t
	return t
}

// sweep turns unclaimed targets into operator tabs once no NewTab is in
// flight; r.mu must be held.
func (r *registry) sweep() []consent.TabInfo {
	if r.creating > 0 {
		return nil
	}
	var out []consent.TabInfo
	for id, info := range r.unclaimed {
		delete(r.unclaimed, id)
		out = append(out, r.add(info, "", "").info())
	}
	return out
}

// liveOwned counts conv's tabs that are open or being opened; closed tabs
// (which stay in byID for tab_closed) do not count; r.mu must be held.
func (r *registry) liveOwned(conv consent.ConversationID) int {
	n := r.pending[conv]
	for _, t := range r.byID {
		if !t.closed && t.conv == conv {
			n++
		}
	}
	return n
}

func (r *registry) ownedTargets() []proto.TargetTargetID {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []proto.TargetTargetID
	for _, t := range r.byID {
		if !t.closed && t.conv != "" {
			out = append(out, t.target)
		}
	}
	return out
}

// lookup returns the live tab id owned by conv.
func (r *registry) lookup(conv consent.ConversationID, id consent.TabID) (*tab, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.byID[id]
	switch {
	case t == nil || t.closed:
		return nil, errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "tab %s is closed", id)
	case t.conv != conv:
		return nil, errcode.Errorf(errcode.WrongConversation, errcode.NextListTabs, "tab %s belongs to another conversation or to the operator", id)
	}
	return t, nil
}

// Tabs lists the live tabs: conv's own when conv is not empty, else all
// (operator tabs included), in creation order.
func (b *Browser) Tabs(conv consent.ConversationID) []consent.TabInfo {
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	var ts []*tab
	for _, t := range b.reg.byID {
		if !t.closed && (conv == "" || t.conv == conv) {
			ts = append(ts, t)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].seq < ts[j].seq })
	out := make([]consent.TabInfo, len(ts))
	for i, t := range ts {
		out[i] = t.info()
	}
	return out
}

// Tab returns one tab as last reported, tab_closed when it is gone.
func (b *Browser) Tab(id consent.TabID) (consent.TabInfo, error) {
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	t := b.reg.byID[id]
	if t == nil || t.closed {
		return consent.TabInfo{}, errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "tab %s is closed", id)
	}
	return t.info(), nil
}
