package agent

import (
	"context"
	"strings"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// handoffTool is browser_handoff (design.md §5).
var handoffTool = NewTool(ToolSpec{
	Name:  "browser_handoff",
	Title: "Hand the browser to the person",
	Description: "Pause your conversation and ask the person to take over the tab, with a reason (sign in, solve a CAPTCHA, a sensitive step)." +
		" Use it whenever a page needs credentials, a one-time code or a CAPTCHA: you must never type those." +
		" Returns status:paused; your calls fail with paused until the person resumes. Then call browser_tabs and observe afresh." + descTabID,
}, (*Dispatcher).handoff)

// HandoffArgs are browser_handoff's arguments (the input schema is inferred from them; the jsonschema tags are what the model reads).
type HandoffArgs struct {
	TabID  string `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	Reason string `json:"reason,omitempty" jsonschema:"what the person should do, e.g. sign in or solve a CAPTCHA"`
}

func (d *Dispatcher) handoff(_ context.Context, conv consent.ConversationID, a HandoffArgs) (Result, consent.TabID) {
	tab := consent.TabID(a.TabID)
	if tab != "" {
		owner, known := d.engine.Owner(tab)
		if !known {
			return fail(errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "tab %s is closed", tab)), tab
		}
		if owner != conv {
			return fail(errcode.Errorf(errcode.WrongConversation, errcode.NextListTabs, "that tab belongs to another conversation")), tab
		}
	}
	// A second handoff while paused changes nothing: the person already
	// has the browser, and a repeated take-over would only add noise.
	if !d.engine.Paused(conv) {
		if err := d.engine.HandOff(conv); err != nil {
			return fail(err), tab
		}
	}
	if tab != "" {
		d.engine.FocusTab(tab)
	}
	reason := a.Reason
	if reason == "" {
		reason = "the agent asks you to take over"
	}
	d.engine.Note(conv, "handoff: "+sanitizeNote(reason)+" — press r to resume", true)
	return ok(map[string]any{"status": "paused", "next": string(errcode.NextUserResume)}), tab
}

// sanitizeNote bounds agent-supplied text before it reaches the operator's screen.
func sanitizeNote(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len([]rune(s)) > 160 {
		s = string([]rune(s)[:160]) + "…"
	}
	return s
}
