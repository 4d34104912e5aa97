package consent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/tabwarden/tabwarden/consent/audit"
)

// impl holds all engine state behind one mutex. Audit writes and event
// queueing happen under it, so records and events come out in the order the
// state changed; listener calls happen on the dispatcher, outside it.
type impl struct {
	mu     sync.Mutex
	cfg    Config
	eff    Profile
	closed bool

	seq uint64 // creation order of conversations, tabs and reviews
	run string // random per engine: review ids are "r<run>-<seq>"
	// names keeps every conversation's display name for the console's life
	// (a few bytes each), so activity lines name a conversation that ended.
	names   map[ConversationID]string
	convs   map[ConversationID]*conv
	tabs    map[TabID]*tab
	tabOps  map[TabID]*opImpl
	ops     map[*opImpl]struct{}
	queue   []*review // pending, oldest first
	focused *review
	sel     Selection
	info    Info

	activity []Activity

	subs    map[int]chan struct{}
	nextSub int

	idleCh     chan struct{}
	idleClosed bool

	disp *dispatcher

	// ended holds the conversations whose tabs wait out their grace
	// (ended.go); graceGen tells a stale grace timer from the live one.
	ended    map[ConversationID]*ending
	graceGen uint64
}

type conv struct {
	id     ConversationID
	name   string
	seq    uint64
	paused bool
	// pausedBy is who took the conversation over (while paused).
	pausedBy Operator
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

func newEngine(cfg Config) *Engine {
	if cfg.ReviewDelay <= 0 {
		cfg.ReviewDelay = DefaultReviewDelay
	}
	if cfg.ReviewTimeout <= 0 {
		cfg.ReviewTimeout = DefaultReviewTimeout
	}
	if cfg.OpDeadline <= 0 {
		cfg.OpDeadline = DefaultOpDeadline
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.EndedTabGrace <= 0 {
		cfg.EndedTabGrace = DefaultEndedTabGrace
	}
	e := &Engine{impl: impl{
		cfg:    cfg,
		eff:    effectiveProfile(cfg.Profile, cfg.Floor),
		convs:  map[ConversationID]*conv{},
		names:  map[ConversationID]string{},
		tabs:   map[TabID]*tab{},
		tabOps: map[TabID]*opImpl{},
		ended:  map[ConversationID]*ending{},
		ops:    map[*opImpl]struct{}{},
		subs:   map[int]chan struct{}{},
		info:   cfg.Info,
		idleCh: make(chan struct{}),
		disp:   newDispatcher(),
		run:    newRunID(),
	}}
	close(e.idleCh)
	e.idleClosed = true
	go e.disp.run()
	return e
}

// newRunID is a short random prefix for this engine's review ids, so ids
// stay unique in an audit log that several runs append to.
func newRunID() string {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano()%0xffffff, 16)
	}
	return hex.EncodeToString(b[:])
}

func (e *impl) close() {
	e.mu.Lock()
	if !e.closed {
		for _, r := range append([]*review(nil), e.queue...) {
			e.resolveLocked(r, outcome{err: Errorf(CodeCanceled, NextNone, "console is shutting down"), decision: "canceled", by: "engine"})
		}
		for op := range e.ops {
			op.cancelLocked(Errorf(CodeCanceled, NextNone, "console is shutting down"))
		}
		for _, en := range e.ended {
			en.stop()
		}
		e.closed = true
		e.commitLocked()
	}
	e.mu.Unlock()
	e.disp.stop()
}

func (e *impl) now() time.Time { return e.cfg.Now() }

func (e *impl) profile() Profile { return e.eff }

func (e *impl) addConversation(id ConversationID, name string) {
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

func (e *impl) removeConversation(id ConversationID, reason string) {
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
	why := Errorf(CodeCanceled, NextNone, "%s", msg)
	e.cancelOpsLocked(id, why)
	e.resolveConvLocked(id, outcome{err: why, decision: "canceled", by: "engine", note: "withdrawn: " + msg})
	c.grants = newGrants()
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

func (e *impl) putTab(ti TabInfo) {
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
		e.dropTabLocked(t, Errorf(CodeWrongConversation, NextListTabs, "tab %s changed owner", ti.ID), "canceled")
		t.epoch++
	}
	t.info = ti
	if ti.Conversation != "" && e.sel.Conversation == ti.Conversation && e.sel.Tab == "" {
		e.setSelectionLocked(Selection{Conversation: ti.Conversation, Tab: ti.ID})
	}
	e.commitLocked()
}

func (e *impl) removeTab(id TabID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.tabs[id]
	if !ok {
		return
	}
	e.dropTabLocked(t, Errorf(CodeTabClosed, NextListTabs, "tab %s was closed", id), "tab_closed")
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
func (e *impl) dropTabLocked(t *tab, why *Error, decision string) {
	if c, ok := e.convs[t.info.Conversation]; ok {
		c.grants.revokeTab(t.info.ID)
	}
	for _, r := range append([]*review(nil), e.queue...) {
		if r.tab == t {
			e.resolveLocked(r, outcome{err: why, decision: decision, by: "engine"})
		}
	}
	if op := e.tabOps[t.info.ID]; op != nil {
		op.cancelLocked(why)
	}
}

func (e *impl) owner(id TabID) (ConversationID, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.tabs[id]
	if !ok {
		return "", false
	}
	return t.info.Conversation, true
}

// pickTabLocked chooses what Select(conv, "") shows: the tab with the
// oldest pending review, else the conversation's first tab.
func (e *impl) pickTabLocked(id ConversationID) TabID {
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

func (e *impl) selectTab(id ConversationID, tabID TabID) {
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

func (e *impl) focusTab(tabID TabID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.tabs[tabID]
	if !ok || t.info.Conversation == "" || t.info.Conversation != e.sel.Conversation {
		return
	}
	e.setSelectionLocked(Selection{Conversation: e.sel.Conversation, Tab: tabID})
	e.commitLocked()
}

// setSelectionLocked tells listeners when the tab to bring to front changes.
func (e *impl) setSelectionLocked(s Selection) {
	if s == e.sel {
		return
	}
	old := e.sel
	e.sel = s
	if s.Tab != "" && s.Tab != old.Tab {
		e.emitLocked(Event{Kind: EventSelect, Conversation: s.Conversation, Tab: s.Tab})
	}
}

func (e *impl) visibleLocked(t *tab) bool {
	return t != nil && t.info.Conversation != "" &&
		t.info.Conversation == e.sel.Conversation && t.info.ID == e.sel.Tab
}

func (e *impl) takeOverAs(id ConversationID, op Operator) error {
	op = op.orLocal()
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.convs[id]
	if !ok {
		return ErrUnknownConversation
	}
	c.paused = true
	c.pausedBy = op
	c.epoch++
	why := Errorf(CodePaused, NextUserResume, "the operator took over this conversation")
	e.cancelOpsLocked(id, why)
	e.resolveConvLocked(id, outcome{err: why, decision: "paused", by: "operator", op: op})
	c.grants.nav = map[navKey]struct{}{}
	c.grants.thread = false
	c.grants.session = false
	e.announceLocked(Event{Kind: EventTakeOver, Conversation: id}, withOperator(audit.Record{Kind: audit.KindTakeOver, By: "operator"}, op),
		"take-over by "+op.Name+": "+c.name+" paused; navigation consent revoked", true)
	return nil
}

func (e *impl) resumeAs(id ConversationID, op Operator) error {
	op = op.orLocal()
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.convs[id]
	if !ok {
		return ErrUnknownConversation
	}
	if !c.paused {
		return nil
	}
	c.paused = false
	rec := withOperator(audit.Record{Kind: audit.KindResume, By: "operator"}, op)
	line := "resumed by " + op.Name + ": " + c.name + "; navigation asks again"
	if taker := c.pausedBy; taker != op {
		rec.Note = "taken over by " + taker.Name
		line = "resumed by " + op.Name + " (taken over by " + taker.Name + "): " + c.name + "; navigation asks again"
	}
	c.pausedBy = Operator{}
	e.announceLocked(Event{Kind: EventResume, Conversation: id}, rec, line, false)
	return nil
}

func (e *impl) cancel(id ConversationID) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.convs[id]
	if !ok {
		return ErrUnknownConversation
	}
	c.epoch++
	why := Errorf(CodeCanceled, NextNone, "the operator cancelled the operation")
	e.cancelOpsLocked(id, why)
	e.resolveConvLocked(id, outcome{err: why, decision: "canceled", by: "operator"})
	c.grants.nav = map[navKey]struct{}{}
	e.announceLocked(Event{Kind: EventCancel, Conversation: id}, audit.Record{Kind: audit.KindCancel, By: "operator"},
		"cancelled: "+c.name+"; navigation consent revoked", true)
	return nil
}

func (e *impl) cancelOpsLocked(id ConversationID, why *Error) {
	for op := range e.ops {
		if op.conv == id {
			op.cancelLocked(why)
		}
	}
}

func (e *impl) resolveConvLocked(id ConversationID, out outcome) {
	for _, r := range append([]*review(nil), e.queue...) {
		if r.Conversation == id {
			e.resolveLocked(r, out)
		}
	}
}

func (e *impl) paused(id ConversationID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.convs[id]
	return ok && c.paused
}

func (e *impl) note(id ConversationID, text string, warn bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.addActivityLocked(id, text, warn)
	e.commitLocked()
}

func (e *impl) setInfo(info Info) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.info = info
	e.commitLocked()
}

func (e *impl) addActivityLocked(id ConversationID, text string, warn bool) {
	e.activity = append(e.activity, Activity{Time: e.now(), Conversation: id, Name: e.names[id], Text: text, Warn: warn})
	if n := len(e.activity) - ActivityLimit; n > 0 {
		e.activity = append(e.activity[:0:0], e.activity[n:]...)
	}
}

// auditLocked writes rec synchronously. Only an approval's failure changes
// an outcome (see resolveLocked); other failures are surfaced as a warning
// line so the operator knows the log has a gap.
func (e *impl) auditLocked(rec audit.Record) error {
	if e.cfg.Audit == nil {
		return nil
	}
	rec.Time = e.now()
	if c, ok := e.convs[ConversationID(rec.Conversation)]; ok && rec.Client == "" {
		rec.Client = c.name
	}
	err := e.cfg.Audit.Write(rec)
	if err != nil {
		e.addActivityLocked(ConversationID(rec.Conversation), "audit write failed: "+err.Error(), true)
	}
	return err
}

// announceLocked ends an operator's (or the engine's own) change to
// conversation ev.Conversation, in the one order every such change keeps:
// the audit record first (rec, its Conversation filled in), then the
// activity line, then ev to listeners, and commitLocked last, so the
// snapshot a subscriber reads already holds the line.
func (e *impl) announceLocked(ev Event, rec audit.Record, line string, warn bool) {
	rec.Conversation = string(ev.Conversation)
	e.auditLocked(rec)
	e.addActivityLocked(ev.Conversation, line, warn)
	e.emitLocked(ev)
	e.commitLocked()
}

func (e *impl) emitLocked(ev Event) {
	if e.closed {
		return
	}
	e.disp.push(ev)
}

// commitLocked ends every mutation: move focus, update the idle signal and
// poke subscribers.
func (e *impl) commitLocked() {
	e.refocusLocked()
	idle := len(e.queue) == 0 && len(e.ops) == 0
	switch {
	case idle && !e.idleClosed:
		close(e.idleCh)
		e.idleClosed = true
	case !idle && e.idleClosed:
		e.idleCh = make(chan struct{})
		e.idleClosed = false
	}
	for _, ch := range e.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (e *impl) changes() (<-chan struct{}, func()) {
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

func (e *impl) listen(fn func(Event)) func() { return e.disp.add(fn) }

func (e *impl) waitIdle(ctx context.Context) error {
	for {
		e.mu.Lock()
		ch, idle := e.idleCh, e.idleClosed || e.closed
		e.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (e *impl) sortedConvsLocked() []*conv {
	cs := make([]*conv, 0, len(e.convs))
	for _, c := range e.convs {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].seq < cs[j].seq })
	return cs
}

func (e *impl) snapshot() State {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := State{
		Profile:     e.eff,
		ReviewDelay: e.cfg.ReviewDelay,
		Info:        e.info,
		Selection:   e.sel,
		Activity:    append([]Activity(nil), e.activity...),
		Ended:       e.endedLocked(),
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
		cs := ConversationState{ID: c.id, Name: c.name, Paused: c.paused, PausedBy: c.pausedBy.Name, Grants: c.grants.describe()}
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

func (e *impl) tabStateLocked(t *tab, c *conv, waiting bool) TabState {
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

// dispatcher delivers events in order to listeners on one goroutine, so a
// slow listener delays later events but never the engine, and nothing is
// dropped (the queue is unbounded).
type dispatcher struct {
	mu        sync.Mutex
	q         []Event
	listeners []listener
	nextID    int
	stopped   bool
	wake      chan struct{}
	done      chan struct{}
	once      sync.Once
}

type listener struct {
	id int
	fn func(Event)
}

func newDispatcher() *dispatcher {
	return &dispatcher{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (d *dispatcher) push(ev Event) {
	d.mu.Lock()
	if !d.stopped {
		d.q = append(d.q, ev)
	}
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *dispatcher) add(fn func(Event)) func() {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := d.nextID
	d.nextID++
	d.listeners = append(d.listeners, listener{id, fn})
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		for i, l := range d.listeners {
			if l.id == id {
				d.listeners = append(d.listeners[:i:i], d.listeners[i+1:]...)
				return
			}
		}
	}
}

func (d *dispatcher) run() {
	defer close(d.done)
	for {
		d.mu.Lock()
		if len(d.q) == 0 {
			stopped := d.stopped
			d.mu.Unlock()
			if stopped {
				return
			}
			<-d.wake
			continue
		}
		ev := d.q[0]
		d.q[0] = Event{}
		d.q = d.q[1:]
		ls := append([]listener(nil), d.listeners...)
		d.mu.Unlock()
		for _, l := range ls {
			l.fn(ev)
		}
	}
}

// stop lets the queue drain, then ends run.
func (d *dispatcher) stop() {
	d.once.Do(func() {
		d.mu.Lock()
		d.stopped = true
		d.mu.Unlock()
		select {
		case d.wake <- struct{}{}:
		default:
		}
	})
	<-d.done
}
