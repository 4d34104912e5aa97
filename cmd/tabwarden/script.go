package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// scriptStep is one line of a --script file: a consent request an agent
// would make, so the operator screen can be exercised before the browser
// and agent bridge exist. It is a development aid (the flag is hidden), not
// a way to drive a browser.
type scriptStep struct {
	After        string              `json:"after"` // wait this long after the conversation's previous request resolved
	Conversation string              `json:"conversation"`
	Name         string              `json:"name"`
	Tab          string              `json:"tab"`
	URL          string              `json:"url"`        // the tab's URL when it first appears (default about:blank)
	Background   bool                `json:"background"` // do not focus the tab (a background open)
	Gate         string              `json:"gate"`
	Origin       string              `json:"origin"`
	Consequence  string              `json:"consequence"`
	Action       *consent.Action     `json:"action"`
	Plan         []consent.Action    `json:"plan"`
	Upload       *consent.Upload     `json:"upload"`
	ToolCall     *consent.ToolCall   `json:"toolCall"`
	Disclosure   *consent.Disclosure `json:"disclosure"`

	line  int
	after time.Duration
}

// loadScript parses and validates the whole file before the console starts,
// so a typo is a usage error on the terminal rather than a line lost in the
// activity log.
func loadScript(path string) ([]scriptStep, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var steps []scriptStep
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		var st scriptStep
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		st.line = n
		if err := st.validate(); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		steps = append(steps, st)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%s: no requests", path)
	}
	return steps, nil
}

func (st *scriptStep) validate() error {
	if st.After != "" {
		d, err := time.ParseDuration(st.After)
		if err != nil || d < 0 {
			return fmt.Errorf("after %q: want a non-negative duration like 200ms", st.After)
		}
		st.after = d
	}
	if st.Conversation == "" || st.Tab == "" || st.Origin == "" {
		return errors.New("conversation, tab and origin are required")
	}
	if st.Name == "" {
		st.Name = st.Conversation
	}
	details := 0
	for _, set := range []bool{st.Action != nil, st.Plan != nil, st.Upload != nil, st.ToolCall != nil, st.Disclosure != nil} {
		if set {
			details++
		}
	}
	switch consent.Gate(st.Gate) {
	case consent.GateNavigation, consent.GateRead:
		if details != 0 {
			return fmt.Errorf("gate %s takes no action, plan, upload, toolCall or disclosure", st.Gate)
		}
	case consent.GateAction:
		if details != 1 || st.Disclosure != nil {
			return errors.New("gate action needs exactly one of action, plan, upload, toolCall")
		}
	case consent.GateDisclosure:
		if details != 1 || st.Disclosure == nil {
			return errors.New("gate disclosure needs disclosure")
		}
		d := st.Disclosure
		if d.Size == 0 {
			d.Size = len(d.Result)
		}
		if d.SHA256 == "" {
			sum := sha256.Sum256([]byte(d.Result))
			d.SHA256 = hex.EncodeToString(sum[:])
		}
	default:
		return fmt.Errorf("gate %q: use navigation, read, action or disclosure", st.Gate)
	}
	return nil
}

func (st *scriptStep) request() consent.Request {
	return consent.Request{
		Gate:         consent.Gate(st.Gate),
		Conversation: consent.ConversationID(st.Conversation),
		Tab:          consent.TabID(st.Tab),
		Origin:       st.Origin,
		Consequence:  st.Consequence,
		Action:       st.Action,
		Plan:         st.Plan,
		Upload:       st.Upload,
		ToolCall:     st.ToolCall,
		Disclosure:   st.Disclosure,
	}
}

// opName is the MCP tool that would have made the request, for the
// inventory's "running" column.
func (st *scriptStep) opName() string {
	switch {
	case consent.Gate(st.Gate) == consent.GateNavigation:
		return "browser_open"
	case consent.Gate(st.Gate) == consent.GateRead:
		return "browser_observe"
	case st.ToolCall != nil, st.Disclosure != nil:
		return "webmcp_call_tool"
	case st.Upload != nil:
		return "browser_upload"
	case st.Plan != nil:
		return "browser_batch"
	default:
		return "browser_act"
	}
}

// scriptEngine is the part of the consent engine the feeder drives.
type scriptEngine interface {
	AddConversation(consent.ConversationID, string)
	PutTab(consent.TabInfo)
	FocusTab(consent.TabID)
	Begin(context.Context, consent.ConversationID, consent.TabID, string) (*consent.Op, error)
	Ask(context.Context, consent.Request) error
	Note(consent.ConversationID, string, bool)
}

// feedScript plays steps until they are done or ctx ends. Each conversation
// is an agent doing one thing at a time: its requests run in order, each
// `after` its previous one resolved; conversations run concurrently so the
// review queue and "needs attention" badges can be exercised. Every outcome
// goes to the activity log via Note.
func feedScript(ctx context.Context, eng scriptEngine, steps []scriptStep) {
	var order []string
	byConv := map[string][]scriptStep{}
	for _, st := range steps {
		if _, ok := byConv[st.Conversation]; !ok {
			order = append(order, st.Conversation)
		}
		byConv[st.Conversation] = append(byConv[st.Conversation], st)
	}
	var wg sync.WaitGroup
	for _, conv := range order {
		convSteps := byConv[conv]
		eng.AddConversation(consent.ConversationID(conv), convSteps[0].Name)
		wg.Go(func() { playConversation(ctx, eng, convSteps) })
	}
	wg.Wait()
}

func playConversation(ctx context.Context, eng scriptEngine, steps []scriptStep) {
	seen := map[string]bool{}
	for _, st := range steps {
		t := time.NewTimer(st.after)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		conv := consent.ConversationID(st.Conversation)
		tab := consent.TabID(st.Tab)
		if !seen[st.Tab] {
			seen[st.Tab] = true
			url := st.URL
			if url == "" {
				url = "about:blank"
			}
			eng.PutTab(consent.TabInfo{ID: tab, Conversation: conv, URL: url})
			if !st.Background {
				eng.FocusTab(tab)
			}
		}
		err := runStep(ctx, eng, st)
		if ctx.Err() != nil {
			return
		}
		if err == nil && consent.Gate(st.Gate) == consent.GateNavigation {
			eng.PutTab(consent.TabInfo{ID: tab, Conversation: conv, URL: strings.TrimSuffix(st.Origin, "/") + "/"})
		}
		eng.Note(conv, outcomeText(st, err), err != nil)
	}
}

func runStep(ctx context.Context, eng scriptEngine, st scriptStep) error {
	op, err := eng.Begin(ctx, consent.ConversationID(st.Conversation), consent.TabID(st.Tab), st.opName())
	if err != nil {
		return err
	}
	defer op.End()
	return eng.Ask(op.Context(), st.request())
}

// outcomeText is the activity line for a scripted request's result.
func outcomeText(st scriptStep, err error) string {
	what := fmt.Sprintf("script outcome: %s %s", st.Gate, st.Origin)
	switch code := errcode.Of(err); {
	case err == nil:
		return what + " approved"
	case code == errcode.UserDenied:
		return what + " denied (" + string(code) + ")"
	default:
		return what + " not approved (" + string(code) + ")"
	}
}
