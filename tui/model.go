package tui

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/tabwarden/tabwarden/consent"
)

// Messages. They carry values, never pointers into the model.
type (
	// stateChangedMsg carries a snapshot read after a Changes signal.
	stateChangedMsg struct {
		state  consent.State
		closed bool // the engine closed the channel: stop listening
	}
	tickMsg      time.Time
	flashDoneMsg struct{ seq int }
	// notifyStartMsg calls the operator for the reviews already waiting
	// when the screen starts (an SSH operator joining).
	notifyStartMsg struct{}
)

const (
	flashTooEarly = "key ignored: review just appeared"
	flashNoMinter = "agent tokens arrive with the MCP server"
	// defaultTokenName is the token every console start mints anew.
	defaultTokenName = "default"
	flashNoPrompt    = "p gives the built-in agent a task; no agent here: start with tabwarden run"
	quitPrompt       = "quit? live conversations will be canceled (y/n)"
	// quitPromptSSH is quitPrompt when operators watch over SSH: their
	// screens end with the console.
	quitPromptSSH     = "quit? live conversations will be canceled and %s disconnected (y/n)"
	quitPromptOnlySSH = "quit? %s will be disconnected (y/n)"
	quitPromptShort   = "quit? ends the conversations and %s (y/n)"
	defaultWidth      = 80
	defaultHeight     = 24
)

// subscription is the engine's change feed, shared by copies of the model
// (bubbletea passes models by value) and released once by Close.
type subscription struct {
	ch    <-chan struct{}
	unsub func()
	stop  chan struct{}
	once  sync.Once
}

func (s *subscription) close() {
	s.once.Do(func() {
		close(s.stop)
		if s.unsub != nil {
			s.unsub()
		}
	})
}

// Model is the one root tea.Model of the operator's screen.
type Model struct {
	svc  Service
	opts Options
	// bodyOnly: compose draws the body without header and footer (the
	// side page view draws those across the full width).
	bodyOnly bool
	keys     keyMap
	help     help.Model
	// helpCache is shared by the model's copies, like sub.
	helpCache *helpCache
	st        styles
	sub       *subscription

	state consent.State
	// sel is the selection as the operator last moved it; the next snapshot
	// (which includes the engine's answer to Select) overrides it.
	sel consent.Selection
	now time.Time

	width, height int
	showHelp      bool
	details       bool
	confirmQuit   bool
	flash         string
	flashSeq      int
	tokens        *tokenPanel
	grants        *grantsPanel // the G list, when open

	// vp scrolls the focused review's body; vpKey says what it was filled
	// from, so it is refilled only when that changes and a new review
	// starts at the top.
	vp    viewport.Model
	vpKey bodyKey

	// seen is when the focused review (seenID) reached this screen; the
	// key-ahead guard counts from it (per screen, design.md §11).
	seenID string
	seenAt time.Time
	// resumeConv is set after an `r` on a conversation another operator
	// took over: a second `r` resumes it.
	resumeConv consent.ConversationID

	// promptOpen: the task prompt (`p`, input) has every key.
	promptOpen bool
	input      textinput.Model
	// page is this screen's page view (pageview.go); pageShared its
	// stream, input worker and render cache, shared by the model's copies.
	page       pageView
	pageShared *pageShared
	// term is what this screen's terminal said of itself (termdetect.go).
	term termDetect
	// notify is what this screen called the operator for (notify.go).
	notify notifyState
}

// New builds the root model and subscribes to svc's changes. Call Close (Run
// does) to release the subscription.
func New(svc Service, opts Options) Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.FlashFor <= 0 {
		opts.FlashFor = defaultFlashFor
	}
	ch, unsub := svc.Changes()
	h := help.New()
	// Two spaces keep the whole short help within 80 columns.
	h.ShortSeparator = "  "
	keys := defaultKeyMap()
	keys.Prompt.SetEnabled(opts.StartTask != nil)
	keys.remote = opts.Remote
	if opts.Remote {
		// An SSH screen's q and ctrl+c end its own session, not the
		// console.
		keys.Quit.SetHelp("q", "leave")
		keys.ForceQ.SetHelp("ctrl+c", "leave")
	}
	m := Model{
		svc:       svc,
		opts:      opts,
		keys:      keys,
		help:      h,
		helpCache: &helpCache{},
		st:        defaultStyles(),
		sub:       &subscription{ch: ch, unsub: unsub, stop: make(chan struct{})},
		width:     defaultWidth,
		height:    defaultHeight,
		vp:        viewport.New(),

		pageShared: newPageShared(),
	}
	m.setState(svc.Snapshot())
	m.now = opts.Now()
	m.syncViewport()
	return m
}

// Close releases the change subscription; the model must not be run after.
func (m Model) Close() {
	m.sub.close()
	m.pageShared.close()
}

// Init starts listening for changes and the once-a-second clock.
func (m Model) Init() tea.Cmd {
	return tea.Batch(m.waitForChange(), tick(), func() tea.Msg { return notifyStartMsg{} })
}

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// waitForChange blocks on one Changes signal and reads a snapshot; the
// model applies it in Update.
func (m Model) waitForChange() tea.Cmd {
	sub, svc := m.sub, m.svc
	if sub.ch == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case _, ok := <-sub.ch:
			if !ok {
				return stateChangedMsg{state: svc.Snapshot(), closed: true}
			}
			return stateChangedMsg{state: svc.Snapshot()}
		case <-sub.stop:
			return nil
		}
	}
}

func (m *Model) setState(s consent.State) {
	m.state = s
	if !m.opts.Remote {
		m.sel = s.Selection
	} else if !hasConversation(s, m.sel.Conversation) {
		// An SSH screen keeps its own selection, but never none while
		// there is something to select: t, r and x act on it, and a
		// newcomer's first t must do something. The console's own
		// selection first, else the first conversation.
		m.sel = consent.Selection{}
		if hasConversation(s, s.Selection.Conversation) {
			m.sel = s.Selection
		} else if len(s.Conversations) > 0 {
			m.sel = consent.Selection{Conversation: s.Conversations[0].ID}
		}
	}
	m.noteSeen()
}

// Update routes every message; the only side effects are Service calls.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	if env, ok := msg.(tea.EnvMsg); ok {
		m.notify.desktop = detectDesktop(env)
	}
	if c, used := m.imageUpdate(msg); used {
		return m, c
	}
	dc, used := m.detectUpdate(msg)
	if used {
		return m, tea.Batch(dc, m.syncImage())
	}
	if c, used := m.pageUpdate(msg); used {
		m.syncViewport()
		return m, tea.Batch(c, dc, m.syncPage(), m.syncImage())
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.sizePrompt()
	case stateChangedMsg:
		m.setState(msg.state)
		m.now = m.opts.Now()
		cmd = m.notifyUpdate()
		if !msg.closed {
			cmd = tea.Batch(cmd, m.waitForChange())
		}
	case notifyStartMsg:
		cmd = m.notifyUpdate()
	case tickMsg:
		m.now = m.opts.Now()
		cmd = tea.Batch(tick(), m.rewriteImage(), m.pageTextUpdate(msg), m.queueFocus(true))
	case pageTextMsg:
		cmd = m.pageTextUpdate(msg)
	case flashDoneMsg:
		if msg.seq == m.flashSeq {
			m.flash = ""
		}
	case taskStartedMsg:
		cmd = m.taskStarted(msg)
	case tea.PasteMsg:
		// A paste only ever types into the open task prompt; it never
		// reaches a review's keys.
		if m.promptOpen {
			m.input, cmd = m.input.Update(msg)
		}
	case tea.KeyPressMsg:
		cmd = m.handleKey(msg)
	}
	m.syncViewport()
	return m, tea.Batch(cmd, dc, m.syncPage(), m.syncImage())
}

func (m *Model) setFlash(s string) tea.Cmd {
	m.flashSeq++
	m.flash = s
	seq := m.flashSeq
	return tea.Tick(m.opts.FlashFor, func(time.Time) tea.Msg { return flashDoneMsg{seq: seq} })
}

func (m *Model) handleKey(k tea.KeyPressMsg) tea.Cmd {
	keys := m.keys
	if m.promptOpen {
		return m.promptKey(k)
	}
	if cmd, used := m.pageKey(k); used {
		return cmd
	}
	if m.opts.Remote && key.Matches(k, keys.Quit, keys.ForceQ) {
		// An SSH screen leaves; the console and its agents carry on.
		return m.quit()
	}
	if m.tokens != nil {
		if cmd, used := m.tokenKey(k); used {
			return cmd
		}
	}
	if m.grants != nil {
		if cmd, used := m.grantsKey(k); used {
			return cmd
		}
	}
	resumeConv := m.resumeConv
	m.resumeConv = ""
	if m.confirmQuit {
		// Any answer but yes keeps the console running; no other key acts
		// while the question is open, so a stray `a` cannot approve.
		if key.Matches(k, keys.Yes, keys.ForceQ) {
			if m.opts.BeforeQuit != nil {
				m.opts.BeforeQuit()
			}
			for _, c := range m.state.Conversations {
				_ = m.cancel(c.ID)
			}
			return m.quit()
		}
		m.confirmQuit = false
		return nil
	}
	switch {
	case key.Matches(k, keys.Quit, keys.ForceQ):
		if len(m.state.Conversations) == 0 && len(m.quitDisconnects()) == 0 {
			return m.quit()
		}
		m.confirmQuit = true
		return nil
	case key.Matches(k, keys.Approve):
		return m.decide(true)
	case key.Matches(k, keys.Scoped):
		return m.decideScoped()
	case key.Matches(k, keys.Grants):
		return m.openGrants()
	case key.Matches(k, keys.Deny):
		return m.decide(false)
	case key.Matches(k, keys.TakeOver):
		return m.onConversation("take over", m.takeOver)
	case key.Matches(k, keys.Resume):
		return m.resume(resumeConv)
	case key.Matches(k, keys.Cancel):
		return m.onConversation("cancel", m.cancel)
	case key.Matches(k, keys.Unfreeze):
		return m.clearFreeze()
	case key.Matches(k, keys.Keep):
		return m.keepTabs()
	case key.Matches(k, keys.Mint):
		return m.mint()
	case key.Matches(k, keys.Prompt):
		return m.openPrompt()
	case k.String() == "p":
		return m.setFlash(flashNoPrompt)
	case key.Matches(k, keys.Oldest):
		return m.gotoOldest()
	case key.Matches(k, keys.NextConv):
		return m.moveConversation(1)
	case key.Matches(k, keys.PrevConv):
		return m.moveConversation(-1)
	case key.Matches(k, keys.Down):
		m.moveTab(1)
	case key.Matches(k, keys.Up):
		m.moveTab(-1)
	case key.Matches(k, keys.Details):
		// The details land in the conversation list, which a small screen
		// may show below the fold: say what changed (the walk saw no
		// difference at 80×24).
		m.details = !m.details
		if m.details {
			return m.setFlash("details on: selected tab's URL, status, grants; a site tool's whole input")
		}
		return m.setFlash("details off")
	case key.Matches(k, keys.ScrollDn):
		m.vp.ScrollDown(1)
	case key.Matches(k, keys.ScrollUp):
		m.vp.ScrollUp(1)
	case key.Matches(k, keys.PageDn):
		m.vp.PageDown()
	case key.Matches(k, keys.PageUp):
		m.vp.PageUp()
	case key.Matches(k, keys.Dismiss):
		m.tokens = nil
		m.showHelp = false // the help lists esc as closing a panel
	case key.Matches(k, keys.Help):
		m.showHelp = !m.showHelp
	}
	return nil
}

// gotoOldest selects the tab of the oldest review waiting in the queue, so it
// comes to front and shows (design.md §4, g).
func (m *Model) gotoOldest() tea.Cmd {
	for _, r := range m.state.Queue {
		if m.state.Focused != nil && r.ID == m.state.Focused.ID {
			continue
		}
		m.svc.Select(r.Conversation, r.Tab)
		return nil
	}
	return m.setFlash("no review is waiting")
}

func (m *Model) decide(approve bool) tea.Cmd {
	f := m.state.Focused
	if f == nil {
		return m.setFlash("no review on screen")
	}
	err := m.decideAs(f.ID, approve)
	switch {
	case err == nil && approve:
		return m.setFlash("approved: " + clean(f.ApproveLabel))
	case err == nil:
		return m.setFlash("denied: " + clean(f.Title))
	case errors.Is(err, consent.ErrTooEarly):
		return m.setFlash(flashTooEarly)
	case errors.Is(err, consent.ErrNoSuchReview):
		return m.setFlash("that review was already resolved")
	case errors.Is(err, consent.ErrNotShown):
		return m.setFlash("that review is not on screen")
	default:
		return m.setFlash("decision failed: " + clean(err.Error()))
	}
}

// endedName reports whether conv is no longer live, with the name the
// screen lists it under.
func (m *Model) endedName(conv consent.ConversationID) (string, bool) {
	for _, c := range m.state.Conversations {
		if c.ID == conv {
			return "", false
		}
	}
	for _, e := range m.state.Ended {
		if e.ID == conv {
			return e.Name, true
		}
	}
	return "that conversation", true
}

func (m *Model) onConversation(what string, fn func(consent.ConversationID) error) tea.Cmd {
	conv := m.sel.Conversation
	if conv == "" {
		return m.setFlash(flashNoConversation)
	}
	if name, ended := m.endedName(conv); ended {
		// The selection can stay on an [ended] line while another
		// conversation's review is on screen; "unknown conversation"
		// would contradict the list (docs/decisions.md, Issue 25).
		return m.setFlash(clean(name) + " has ended: nothing to " + what + "; ↑↓ selects a live conversation")
	}
	if err := fn(conv); err != nil {
		return m.setFlash(what + " failed: " + clean(err.Error()))
	}
	return nil
}

// clearFreeze thaws the selected conversation. It acts only on a freeze
// the operator can see on screen, so the key never clears one that
// arrived after the last render.
func (m *Model) clearFreeze() tea.Cmd {
	conv := m.sel.Conversation
	if conv == "" {
		return m.setFlash(flashNoConversation)
	}
	c := m.selectedConversation()
	if c == nil || c.Frozen == nil {
		return m.setFlash("nothing to clear: the selected conversation is not frozen")
	}
	if err := m.clearFreezeOf(conv); err != nil {
		return m.setFlash("clear freeze failed: " + clean(err.Error()))
	}
	return m.setFlash("freeze cleared: " + convLabel(*c) + " may call tools again")
}

// keepTabs keeps the tabs of the selected ended conversation open. Like
// clearFreeze it acts only on what the operator sees: an ended
// conversation selected on screen.
func (m *Model) keepTabs() tea.Cmd {
	for _, en := range m.state.Ended {
		if en.ID != m.sel.Conversation {
			continue
		}
		if err := m.keepTabsOf(en.ID); err != nil {
			return m.setFlash("keep failed: " + clean(err.Error()))
		}
		return m.setFlash(fmt.Sprintf("kept %s of %s: they stay open as operator tabs", countOf(len(en.Tabs), "tab"), clean(en.Name)))
	}
	return m.setFlash("nothing to keep: select an ended conversation whose tabs are about to close")
}

func (m *Model) mint() tea.Cmd {
	if m.opts.Remote {
		return m.setFlash(flashRemoteMint)
	}
	if m.opts.Minter == nil {
		return m.setFlash(flashNoMinter)
	}
	m.tokens = &tokenPanel{names: m.opts.Minter.Tokens(), hosts: m.opts.Minter.Hosts()}
	return nil
}

// tokenKey handles a key while the token panel is open: a digit mints a
// token for that host (and copies its configuration with OSC 52), ↑/↓
// pick a token, X revokes it, esc closes. It reports whether it used k;
// every other key (a, d, …) works as usual.
func (m *Model) tokenKey(k tea.KeyPressMsg) (tea.Cmd, bool) {
	p := m.tokens
	if name := p.revoking; name != "" {
		// The confirmation takes the next key, whatever it is: only y
		// revokes.
		p.revoking = ""
		if k.String() != "y" {
			return m.setFlash("kept token " + clean(name)), true
		}
		if err := m.opts.Minter.RevokeToken(name); err != nil {
			return m.setFlash("revoking " + clean(name) + " failed: " + clean(err.Error())), true
		}
		p.names = m.opts.Minter.Tokens()
		p.sel = min(p.sel, max(len(p.names)-1, 0))
		return m.setFlash("revoked token " + clean(name) + ": its conversations ended"), true
	}
	switch s := k.String(); {
	case s == "esc" && p.minted != nil:
		// From a minted configuration back to the list.
		p.minted, p.mintedFor, p.scroll = nil, "", 0
		return nil, true
	case s == "esc":
		m.tokens = nil
		return nil, true
	case (s == "up" || s == "down") && p.minted != nil:
		// A configuration on screen scrolls. Render keeps the offset in
		// range for the room it has; here it is bounded by the rows of
		// the narrowest panel, so ↓ always reaches the last line.
		if s == "up" {
			p.scroll = max(p.scroll-1, 0)
		} else {
			p.scroll = min(p.scroll+1, len(tokenBox{p: *p}.lines(narrowestPanel)))
		}
		return nil, true
	case s == "up":
		p.sel = max(p.sel-1, 0)
		return nil, true
	case s == "down":
		p.sel = min(p.sel+1, max(len(p.names)-1, 0))
		return nil, true
	case s == "X" && p.minted != nil:
		return nil, true // X revokes from the list, where the selection shows
	case s == "X":
		if len(p.names) == 0 {
			return m.setFlash("no token to revoke"), true
		}
		name := p.names[p.sel]
		if name == defaultTokenName {
			// mcp.json and the header name it, and mcp-stdio falls back
			// on it: revoked, they would point at a dead token until a
			// restart, which mints a new one anyway.
			return m.setFlash("default is the console's own token (mcp.json, mcp-stdio); a restart renews it"), true
		}
		p.revoking = name
		return nil, true
	case len(s) == 1 && s[0] >= '1' && int(s[0]-'0') <= len(p.hosts):
		host := p.hosts[s[0]-'1']
		tok, err := m.opts.Minter.MintFor(host)
		if err != nil {
			return m.setFlash("minting a token failed: " + clean(err.Error())), true
		}
		p.minted, p.mintedFor, p.scroll = &tok, host, 0
		p.names = m.opts.Minter.Tokens()
		// OSC 52: terminals that allow it put the configuration on the
		// clipboard; the others ignore the sequence.
		return tea.Batch(tea.SetClipboard(tok.Config), m.setFlash("token "+clean(tok.Name)+" minted; the clipboard has its configuration if the terminal allows")), true
	}
	return nil, false
}

func (m *Model) selectItem(it navItem) {
	m.sel = consent.Selection{Conversation: it.conv, Tab: it.tab}
	if !m.opts.Remote {
		m.svc.Select(it.conv, it.tab)
	}
}

// moveTab steps through every tab of every conversation, wrapping around.
func (m *Model) moveTab(delta int) {
	items := navItems(m.state)
	if len(items) == 0 {
		return
	}
	i := navIndex(items, m.sel)
	if i < 0 {
		i = 0
		if delta < 0 {
			i = len(items) - 1
		}
	} else {
		i = (i + delta + len(items)) % len(items)
	}
	m.selectItem(items[i])
}

// moveConversation jumps to the next or previous conversation; the engine
// picks its tab (the one with the oldest pending review first).
func (m *Model) moveConversation(delta int) tea.Cmd {
	// Ended conversations are stops too, after the live ones, as they are
	// for ↑↓: selecting one is how its tabs are kept (o).
	var cs []consent.ConversationID
	for _, c := range m.state.Conversations {
		cs = append(cs, c.ID)
	}
	for _, en := range m.state.Ended {
		cs = append(cs, en.ID)
	}
	if len(cs) == 0 {
		return m.setFlash("no conversation to move to: agents connect over MCP")
	}
	i := -1
	for j, c := range cs {
		if c == m.sel.Conversation {
			i = j
		}
	}
	if i < 0 {
		i = 0
		if delta < 0 {
			i = len(cs) - 1
		}
	} else {
		i = (i + delta + len(cs)) % len(cs)
	}
	m.sel = consent.Selection{Conversation: cs[i]}
	if !m.opts.Remote {
		m.svc.Select(cs[i], "")
	}
	return nil
}

// View renders the whole screen.
func (m Model) View() tea.View {
	v := tea.NewView(m.render())
	m.noteView(v.Content)
	if m.page.input {
		// Clicks on the page view go to the page only in input mode;
		// otherwise the terminal keeps its own selection.
		v.MouseMode = tea.MouseModeCellMotion
	}
	v.AltScreen = true
	v.WindowTitle = m.windowTitle()
	return v
}

// flashNoConversation answers a key that acts on the selected conversation
// when there is none.
const flashNoConversation = "no conversation selected: tab selects one"

// hasConversation reports whether id is a live or ended conversation of s.
func hasConversation(s consent.State, id consent.ConversationID) bool {
	if id == "" {
		return false
	}
	for _, c := range s.Conversations {
		if c.ID == id {
			return true
		}
	}
	for _, e := range s.Ended {
		if e.ID == id {
			return true
		}
	}
	return false
}

// quitDisconnects is who quitting this screen disconnects: the operators on
// SSH screens when this is the console's own terminal (an SSH screen's q
// only leaves).
func (m Model) quitDisconnects() []string {
	if m.opts.Remote {
		return nil
	}
	return cleanNames(m.state.Operators)
}
