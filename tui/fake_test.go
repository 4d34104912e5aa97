package tui

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tabwarden/tabwarden/consent"
)

// fakeService records every operator call and serves a fixed snapshot.
type fakeService struct {
	mu       sync.Mutex
	state    consent.State
	ch       chan struct{}
	decideFn func(id string, approve bool) error
	calls    []string
	decided  chan string // receives "id approve" on each Decide
	unsubbed bool
}

func newFake(s consent.State) *fakeService {
	return &fakeService{state: s, ch: make(chan struct{}, 1), decided: make(chan string, 16)}
}

func (f *fakeService) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeService) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeService) Snapshot() consent.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

// set replaces the snapshot and signals a change, coalescing like the engine.
func (f *fakeService) set(s consent.State) {
	f.mu.Lock()
	f.state = s
	f.mu.Unlock()
	select {
	case f.ch <- struct{}{}:
	default:
	}
}

func (f *fakeService) Changes() (<-chan struct{}, func()) {
	return f.ch, func() {
		f.mu.Lock()
		f.unsubbed = true
		f.mu.Unlock()
	}
}

func (f *fakeService) Decide(id string, approve bool) error {
	verb := "deny"
	if approve {
		verb = "approve"
	}
	f.record("decide " + id + " " + verb)
	var err error
	if f.decideFn != nil {
		err = f.decideFn(id, approve)
	}
	f.decided <- id + " " + verb
	return err
}

func (f *fakeService) Select(conv consent.ConversationID, tab consent.TabID) {
	f.record("select " + string(conv) + " " + string(tab))
}

func (f *fakeService) TakeOver(conv consent.ConversationID) error {
	f.record("takeover " + string(conv))
	return nil
}

func (f *fakeService) Resume(conv consent.ConversationID) error {
	f.record("resume " + string(conv))
	return nil
}

func (f *fakeService) Cancel(conv consent.ConversationID) error {
	f.record("cancel " + string(conv))
	return nil
}

func (f *fakeService) ClearFreeze(conv consent.ConversationID) error {
	f.record("clearfreeze " + string(conv))
	return nil
}

func (f *fakeService) KeepTabs(conv consent.ConversationID) error {
	f.record("keep " + string(conv))
	return nil
}

// fakeMinter keeps its tokens in memory, as the MCP server does.
type fakeMinter struct {
	names []string
}

func (f *fakeMinter) Hosts() []string { return []string{"claude-code", "codex"} }

func (f *fakeMinter) MintFor(host string) (MintedToken, error) {
	f.names = append(f.names, host)
	return MintedToken{Name: host, Where: "Claude Code, in a shell",
		Config: "claude mcp add --transport http tabwarden http://127.0.0.1:8765/mcp --header 'Authorization: Bearer tw_test-secret-that-is-long-enough-to-pass-the-edge'\n"}, nil
}

func (f *fakeMinter) Tokens() []string { return append([]string(nil), f.names...) }

func (f *fakeMinter) RevokeToken(name string) error {
	f.names = slices.DeleteFunc(f.names, func(n string) bool { return n == name })
	return nil
}

// Fixtures. The clock is fixed so remaining-time text is stable.

var fixedNow = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return fixedNow }

const longOrigin = "https://checkout-eu-west-3.payments.very-long-subdomain.example.com:8443"

func baseState() consent.State {
	return consent.State{
		Profile:     consent.ProfileStrict,
		ReviewDelay: 500 * time.Millisecond,
		Info: consent.Info{
			Browser:  "Chromium 131 headed (profile ~/.local/share/tabwarden/profile)",
			Endpoint: "http://127.0.0.1:8765/mcp",
			Policy:   "2 origins allowed, uploads blocked",
		},
		Conversations: []consent.ConversationState{
			{
				ID: "c1a2", Name: "claude-code · Claude Code", Running: true,
				Grants: []string{"read https://shop.example"},
				Tabs: []consent.TabState{
					{TabInfo: consent.TabInfo{ID: "t1", Conversation: "c1a2", URL: "https://shop.example/cart", Title: "Cart — Shop"},
						Status: consent.TabRunning, Operation: "browser_act", Visible: true, NavigationGrant: []string{"https://shop.example"}},
					{TabInfo: consent.TabInfo{ID: "t2", Conversation: "c1a2", URL: "https://docs.example/guide", Title: "Guide", OpenerTabID: "t1", BlockedRequests: 2},
						Status: consent.TabIdle, Blocked: true},
				},
			},
			{
				ID: "c3d4", Name: "opencode · opencode",
				Tabs: []consent.TabState{
					{TabInfo: consent.TabInfo{ID: "t3", Conversation: "c3d4", URL: "about:blank", Title: ""}, Status: consent.TabIdle},
				},
			},
		},
		OperatorTabs: []consent.TabState{
			{TabInfo: consent.TabInfo{ID: "t9", URL: "https://mail.example/inbox", Title: "Inbox"}, Status: consent.TabIdle},
		},
		Selection: consent.Selection{Conversation: "c1a2", Tab: "t1"},
		Activity: []consent.Activity{
			{Time: fixedNow.Add(-50 * time.Second), Conversation: "c1a2", Text: "browser_open https://shop.example approved"},
			{Time: fixedNow.Add(-30 * time.Second), Conversation: "c1a2", Text: "browser_observe t1: 42 elements"},
			{Time: fixedNow.Add(-20 * time.Second), Conversation: "c1a2", Text: "t2: 2 requests blocked by policy", Warn: true},
			{Time: fixedNow.Add(-5 * time.Second), Conversation: "c3d4", Text: "connected"},
		},
	}
}

func review(kind consent.ReviewKind, title, label string) consent.Review {
	return consent.Review{
		ID: "r-" + string(kind), Kind: kind, Title: title, ApproveLabel: label,
		Conversation: "c1a2", ConversationName: "claude-code · Claude Code", Tab: "t1",
		Origin: "https://shop.example", OriginUnicode: "https://shop.example",
		Consequence: "The agent acts on this page as you; the site sees a real click or keystroke.",
		Created:     fixedNow.Add(-3 * time.Second), ShownAt: fixedNow.Add(-3 * time.Second), Deadline: fixedNow.Add(42 * time.Second),
	}
}

func withFocus(s consent.State, r consent.Review) consent.State {
	s.Queue = append([]consent.Review{r}, s.Queue...)
	s.Focused = &s.Queue[0]
	s.Conversations[0].Tabs[0].NeedsAttention = false
	return s
}

func actionReview(a consent.Action) consent.Review {
	r := review(consent.KindAction, "Allow this page action?", "Allow once")
	r.ID = "r-act-" + string(a.Type)
	r.Action = &a
	return r
}

// Every panel kind, by golden name.
func panelCases() map[string]consent.State {
	nav := review(consent.KindNavigation, "Allow website navigation?", "Allow origin in this tab")
	nav.Consequence = "Chromium will load this origin in the tab; the site sees your IP address and browser profile cookies."
	read := review(consent.KindRead, "Allow reading this website?", "Allow reading this origin")
	read.Consequence = "Page text and structure of this origin will reach the conversation's model."

	plan := review(consent.KindPlan, "Allow these 4 actions?", "Allow these 4 actions")
	plan.Plan = []consent.Action{
		{Type: consent.ActionFill, Ref: "e4", Role: "textbox", Name: "Title", Text: "Weekly report"},
		{Type: consent.ActionSelect, Ref: "e7", Role: "combobox", Name: "Visibility", Label: "Team only"},
		{Type: consent.ActionClick, Ref: "e9", Role: "button", Name: "Save draft"},
		{Type: "verify", Assertion: "text_contains", Text: "Saved 1"},
	}
	upload := review(consent.KindUpload, "Allow file upload?", "Allow once")
	upload.Upload = &consent.Upload{Filename: "invoice-2026-11.pdf", Size: 1258291, SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Ref: "e21", Role: "button", Name: "Attach file"}
	tool := review(consent.KindToolCall, "Allow site tool call?", "Allow once")
	tool.ToolCall = &consent.ToolCall{ToolName: "save_draft", ToolTitle: "Save a draft", InputSummary: `{"title":"Weekly report","body":"<812 chars>","apiKey":"[redacted]"}`, ReadOnlyHint: true}
	toolValues := review(consent.KindToolCall, "Allow site tool call?", "Allow once")
	toolValues.ToolCall = &consent.ToolCall{ToolName: "save_draft", ToolTitle: "Save a draft",
		InputSummary: `{"apiKey":"[redacted]","body":"string(54)","tags":"array(3) of string","title":"string(13)"}`,
		InputValues:  "{\n  \"apiKey\": \"•••\",\n  \"body\": \"Numbers are up 4% on last week; see the attached chart.\",\n  \"tags\": [\n    \"weekly\",\n    \"sales\",\n    \"draft\"\n  ],\n  \"title\": \"Weekly report\"\n}"}
	disc := review(consent.KindDisclosure, "Share site tool result?", "Share result")
	disc.Consequence = "The result below becomes visible to the conversation's model."
	var items []string
	for i := 1; i <= 14; i++ {
		items = append(items, `{"id":`+itoa(i)+`,"title":"Draft number `+itoa(i)+`","saved":true}`)
	}
	result := `{"ok":true,"drafts":[` + strings.Join(items, ",") + `],"note":"end of result"}`
	disc.Disclosure = &consent.Disclosure{ToolName: "save_draft", Result: result, Size: len(result), SHA256: "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"}
	thread := review(consent.KindThread, "Allow browser control for this thread?", "Allow browser control for this thread")
	thread.Consequence = "Until take-over, cancel or the end of the conversation."
	session := review(consent.KindSession, "Allow for this session?", "Allow for this session")
	session.Consequence = "Until the console exits. Actions run without asking."
	puny := nav
	puny.ID = "r-puny"
	puny.Origin = "https://xn--bcher-kva.example:8443"
	puny.OriginUnicode = "https://bücher.example:8443"
	long := nav
	long.ID = "r-long"
	long.Origin = longOrigin
	long.OriginUnicode = longOrigin

	cases := map[string]consent.State{
		"navigation":    withFocus(baseState(), nav),
		"read":          withFocus(baseState(), read),
		"action_click":  withFocus(baseState(), actionReview(consent.Action{Type: consent.ActionClick, Ref: "e12", Role: "button", Name: "Add to cart"})),
		"action_coord":  withFocus(baseState(), actionReview(consent.Action{Type: consent.ActionClick, Coordinate: true, X: 412, Y: 288})),
		"action_fill":   withFocus(baseState(), actionReview(consent.Action{Type: consent.ActionFill, Ref: "e13", Role: "textbox", Name: "Delivery note", Text: "Please leave the parcel with the neighbour at number 12.\nThanks!"})),
		"action_select": withFocus(baseState(), actionReview(consent.Action{Type: consent.ActionSelect, Ref: "e15", Role: "combobox", Name: "Size", Value: "M"})),
		"action_key":    withFocus(baseState(), actionReview(consent.Action{Type: consent.ActionKey, Key: "Enter"})),
		"action_scroll": withFocus(baseState(), actionReview(consent.Action{Type: consent.ActionScroll, X: 400, Y: 300, DeltaY: 600})),
		"plan":          withFocus(baseState(), plan),
		"upload":        withFocus(baseState(), upload),
		"tool_call":     withFocus(baseState(), tool),
		"tool_values":   withFocus(baseState(), toolValues),
		"disclosure":    withFocus(baseState(), disc),
		"thread":        withFocus(baseState(), thread),
		"session":       withFocus(baseState(), session),
		"punycode":      withFocus(baseState(), puny),
		"long_origin":   withFocus(baseState(), long),
	}
	cases["thread"] = withProfile(cases["thread"], consent.ProfileThread)
	cases["session"] = withProfile(cases["session"], consent.ProfileTrusted)
	return cases
}

func withProfile(s consent.State, p consent.Profile) consent.State {
	s.Profile = p
	return s
}

func itoa(i int) string { return strconv.Itoa(i) }

// queueState has the focused review plus two waiting behind invisible tabs.
func queueState() consent.State {
	s := baseState()
	nav := review(consent.KindNavigation, "Allow website navigation?", "Allow origin in this tab")
	s = withFocus(s, nav)
	r2 := review(consent.KindRead, "Allow reading this website?", "Allow reading this origin")
	r2.ID, r2.Conversation, r2.ConversationName, r2.Tab = "r-q2", "c3d4", "opencode · opencode", "t3"
	r2.Origin, r2.OriginUnicode = "http://127.0.0.1:8080", "http://127.0.0.1:8080"
	r2.ShownAt, r2.Deadline = time.Time{}, time.Time{}
	r3 := actionReview(consent.Action{Type: consent.ActionClick, Ref: "e3", Role: "link", Name: "Next"})
	r3.ID, r3.Tab = "r-q3", "t2"
	r3.Origin, r3.OriginUnicode = "https://docs.example", "https://docs.example"
	r3.ShownAt, r3.Deadline = time.Time{}, time.Time{}
	s.Queue = append(s.Queue, r3, r2)
	s.Focused = &s.Queue[0]
	s.Conversations[0].NeedsAttention = true
	s.Conversations[0].Tabs[1].NeedsAttention = true
	s.Conversations[1].NeedsAttention = true
	s.Conversations[1].Tabs[0].NeedsAttention = true
	return s
}

// queueCountdownState is queueState as the engine reports it: each review
// waiting in the queue has the time left before it fails needs_attention
// (the action's op budget; the held read request's review timeout).
func queueCountdownState() consent.State {
	s := queueState()
	s.Queue[1].QueueDeadline = fixedNow.Add(23*time.Second + 400*time.Millisecond)
	s.Queue[2].QueueDeadline = fixedNow.Add(4*time.Minute + 5*time.Second)
	return s
}

// frozenState has the selected conversation frozen: its agent lost the
// answer to batch job-3f9a2c41d07be815.
func frozenState() consent.State {
	s := baseState()
	s.Conversations[0].Frozen = &consent.Freeze{Job: "job-3f9a2c41d07be815", Since: fixedNow.Add(-40 * time.Second)}
	frozen := consent.Activity{Time: fixedNow.Add(-40 * time.Second), Conversation: "c1a2",
		Text: "frozen: batch job-3f9a2c41d07be815 outcome unknown to the agent; u clears", Warn: true}
	s.Activity = append(s.Activity[:1:1], append([]consent.Activity{frozen}, s.Activity[1:]...)...)
	return s
}

// endedState has a conversation that ended with two tabs, 1:45 before
// they close, and it is selected.
func endedState() consent.State {
	s := baseState()
	s.OperatorTabs = append(s.OperatorTabs,
		consent.TabState{TabInfo: consent.TabInfo{ID: "t5", URL: "https://shop.example/orders", Title: "Orders — Shop"}, Status: consent.TabIdle},
		consent.TabState{TabInfo: consent.TabInfo{ID: "t6", URL: "about:blank"}, Status: consent.TabIdle})
	s.Ended = []consent.EndedConversation{{ID: "c5e6", Name: "cursor · Cursor", EndedAt: fixedNow.Add(-15 * time.Second),
		CloseAt: fixedNow.Add(105 * time.Second), Tabs: []consent.TabID{"t5", "t6"}}}
	s.Selection = consent.Selection{Conversation: "c5e6"}
	s.Activity = append(s.Activity, consent.Activity{Time: fixedNow.Add(-15 * time.Second), Conversation: "c5e6", Name: "cursor · Cursor", Text: "conversation ended: cursor · Cursor"},
		consent.Activity{Time: fixedNow.Add(-15 * time.Second), Conversation: "c5e6", Name: "cursor · Cursor", Text: "its 2 tabs close in 2:00 unless you keep them (o)"})
	return s
}

// dismissedState is endedState after the operator kept the tabs (o): the
// conversation is gone from the list, its tabs are operator tabs, and the
// log still names it.
func dismissedState() consent.State {
	s := endedState()
	s.Ended = nil
	s.Selection = consent.Selection{Conversation: "c1a2", Tab: "t1"}
	s.Activity = append(s.Activity, consent.Activity{Time: fixedNow.Add(-2 * time.Second), Conversation: "c5e6", Name: "cursor · Cursor",
		Text: "kept 2 tabs of ended cursor · Cursor: they stay as operator tabs"})
	return s
}

// overflowState has more conversations than 80×24 can list, the last one
// selected, with a review on screen.
func overflowState() consent.State {
	s := withFocus(baseState(), review(consent.KindRead, "Allow reading this website?", "Allow reading this origin"))
	for i := 1; i <= 8; i++ {
		id := consent.ConversationID("c9" + itoa(i))
		tab := consent.TabID("t" + itoa(20+i))
		s.Conversations = append(s.Conversations, consent.ConversationState{ID: id, Name: "agent-" + itoa(i+1) + " · Codex",
			Tabs: []consent.TabState{{TabInfo: consent.TabInfo{ID: tab, Conversation: id, URL: "https://app.example/" + itoa(i), Title: "App " + itoa(i)}, Status: consent.TabIdle}}})
	}
	s.Selection = consent.Selection{Conversation: "c98", Tab: "t28"}
	return s
}

func pausedState() consent.State {
	s := baseState()
	s.Conversations[0].Paused = true
	s.Conversations[0].Running = false
	s.Conversations[0].Tabs[0].Status = consent.TabPaused
	s.Conversations[0].Tabs[0].Operation = ""
	return s
}
