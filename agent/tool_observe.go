package agent

import (
	"context"
	"strconv"

	"github.com/tabwarden/tabwarden/browser/dom"
	"github.com/tabwarden/tabwarden/consent"
)

// observeTool is browser_observe (design.md §5).
var observeTool = NewTool(ToolSpec{
	Name:  "browser_observe",
	Title: "Observe a page",
	Description: "Read the page of one of your tabs: a header (observationId, url, title, viewport, expiry) and one line per interactive element with a ref (e.g. `e12 button \"Add to cart\"`), plus page text: the first observation of a page holds only its opening (up to " + strconv.Itoa(dom.FirstLookTextChars) + " characters) and says what it left out; pass cursor or textChars to read more." +
		" Always observe before browser_act: each action needs a fresh observationId, and each observation is used up by one action; it also expires after about 15 s, on any page change, navigation or scroll." +
		" Refs stay the same for an element until the page navigates. Use cursor to page through long pages and since to get only what changed." +
		" includeImage adds a viewport screenshot (needed to click by x,y); it is refused while a password or one-time-code field is visible." +
		" Reading an origin needs the person's approval once per conversation." + descTabID + descUntrusted,
	ReadOnly: true,
	Refine:   refine(between(0, 16000, "textChars")),
}, (*Dispatcher).observe)

// ObserveArgs are browser_observe's arguments (the input schema is inferred from them; the jsonschema tags are what the model reads).
type ObserveArgs struct {
	TabID        string `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	IncludeImage bool   `json:"includeImage,omitempty" jsonschema:"also return a viewport PNG (needed for click by x,y)"`
	Cursor       string `json:"cursor,omitempty" jsonschema:"page through elements and text left out of a previous observation"`
	Since        string `json:"since,omitempty" jsonschema:"observationId: return only elements added, removed or changed since it"`
	TextChars    int    `json:"textChars,omitempty" jsonschema:"page text characters to return (at most 16000; default 4000, a short opening on the first observation of a page)"`
}

func (d *Dispatcher) observe(ctx context.Context, conv consent.ConversationID, a ObserveArgs) (Result, consent.TabID) {
	p, res, tab := d.beginPage(ctx, conv, a.TabID, "observe")
	if p == nil {
		return res, tab
	}
	defer p.op.End()
	obs, err := p.dt.Observe(p.op.Context(), dom.ObserveRequest{
		IncludeImage: a.IncludeImage, Cursor: a.Cursor, Since: a.Since, TextChars: a.TextChars,
	})
	if err != nil {
		return fail(opErr(p.op, err)), tab
	}
	fields := map[string]any{
		"observationId": obs.ID,
		"tabId":         obs.TabID,
		"url":           obs.URL,
		"title":         obs.Title,
		"viewport":      obs.Viewport,
		"scroll":        map[string]int{"x": obs.ScrollX, "y": obs.ScrollY},
		"expiresInMs":   obs.ExpiresIn,
		"counts":        obs.Counts,
		"snapshot":      obs.TextForm,
		"trust":         TrustUntrusted,
	}
	if obs.NextCursor != "" {
		fields["cursor"] = obs.NextCursor
	}
	if len(obs.LeftOut) > 0 {
		fields["leftOut"] = obs.LeftOut
	}
	res = ok(withGrant(fields, p.read))
	res.Image = obs.Image
	return res, tab
}
