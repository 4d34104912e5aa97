package agent

import (
	"context"

	"github.com/tabwarden/tabwarden/browser/dom"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// actTool is browser_act (design.md §5).
var actTool = NewTool(ToolSpec{
	Name:  "browser_act",
	Title: "Act on a page",
	Description: "Perform one action on the page you just observed: click {ref} or {x,y}, fill {ref,text}, select {ref,value|label}, key {key}, scroll {x,y,deltaY}." +
		" The person may be asked to allow it first." +
		" The result is only a receipt (dispatched:true, outcome:not_yet_verified): it does not mean the action worked. Call browser_observe or browser_verify to see what happened." +
		" The observation is used up by this action; observe again before the next one." + descUncertain + descHandoff + descTabID,
	Refine: refine(
		enum([]any{"click", "fill", "select", "key", "scroll"}, "action", "type"),
		enum(schemaActKeys, "action", "key"),
		between(-1200, 1200, "action", "deltaY"),
		maxLength(8000, "action", "text"),
	),
}, (*Dispatcher).act)

// ActAction is one page action. Which fields apply depends on type.
type ActAction struct {
	Type   string   `json:"type" jsonschema:"click, fill, select, key or scroll"`
	Ref    string   `json:"ref,omitempty" jsonschema:"element ref from the observation, e.g. e12"`
	X      *float64 `json:"x,omitempty" jsonschema:"CSS pixel x (click by coordinates needs an image observation; scroll position)"`
	Y      *float64 `json:"y,omitempty" jsonschema:"CSS pixel y"`
	Text   string   `json:"text,omitempty" jsonschema:"fill: text that replaces the field's content (at most 8000 characters)"`
	Value  string   `json:"value,omitempty" jsonschema:"select: option value"`
	Label  string   `json:"label,omitempty" jsonschema:"select: option label"`
	Key    string   `json:"key,omitempty" jsonschema:"key: Enter, Tab, Escape, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Backspace, Space, PageUp, PageDown, Home or End"`
	DeltaY *int     `json:"deltaY,omitempty" jsonschema:"scroll: pixels, -1200 to 1200"`
}

// ActArgs are browser_act's arguments (the input schema is inferred from them; the jsonschema tags are what the model reads).
type ActArgs struct {
	TabID         string    `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	ObservationID string    `json:"observationId" jsonschema:"the observation this action is based on; each observation is used up by one action"`
	Action        ActAction `json:"action"`
}

func (d *Dispatcher) act(ctx context.Context, conv consent.ConversationID, a ActArgs) (Result, consent.TabID) {
	if a.ObservationID == "" {
		return fail(errcode.Errorf(errcode.StaleObservation, errcode.NextObserve, "observationId is required: observe first")), ""
	}
	p, res, tab := d.beginPage(ctx, conv, a.TabID, "act")
	if p == nil {
		return res, tab
	}
	defer p.op.End()
	prep, err := p.dt.Prepare(p.op.Context(), a.ObservationID, domAction(a.Action))
	if err != nil {
		return fail(opErr(p.op, err)), tab
	}
	review := reviewAction(prep)
	pass, err := d.engine.AskGrant(p.op.Context(), consent.Request{
		Gate: consent.GateAction, Conversation: conv, Tab: tab, Origin: p.origin,
		Action: review, Recheck: d.sameOrigin(tab, p.origin),
	})
	if err != nil {
		prep.Release()
		return fail(opErr(p.op, err)), tab
	}
	receipt, err := prep.Dispatch(p.op.Context())
	if err != nil {
		return fail(opErr(p.op, err)), tab
	}
	return ok(withGrant(map[string]any{
		"dispatched": receipt.Dispatched,
		"outcome":    receipt.Outcome,
		"next":       string(errcode.NextObserve),
	}, pass)), tab
}

// reviewAction turns a prepared action into what the review panel shows.
func reviewAction(p *dom.Prepared) *consent.Action {
	a := &consent.Action{
		Type: consent.ActionType(p.Action.Type), Text: p.Action.Text, Value: p.Action.Value,
		Label: p.Action.Label, Key: p.Action.Key, DeltaY: int(p.Action.DeltaY),
	}
	if p.Target != nil {
		a.Ref, a.Role, a.Name = p.Target.Ref, p.Target.Role, p.Target.Name
		a.Autocomplete, a.Field, a.CrossOrigin = p.Target.Autocomplete, p.Target.Field, p.Target.CrossOrigin
	}
	a.Box = p.Box
	if p.Point != nil {
		a.X, a.Y = p.Point[0], p.Point[1]
		a.Coordinate = p.Action.Type == "click"
	}
	return a
}

// domAction is the dom form of an act action.
func domAction(a ActAction) dom.Action {
	out := dom.Action{
		Type: a.Type, Ref: a.Ref, X: a.X, Y: a.Y,
		Text: a.Text, Value: a.Value, Label: a.Label, Key: a.Key,
	}
	if a.DeltaY != nil {
		out.DeltaY = float64(*a.DeltaY)
	}
	return out
}

// Keys accepted by act {type:"key"} (design.md §5).
var schemaActKeys = []any{"Enter", "Tab", "Escape", "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Backspace", "Space", "PageUp", "PageDown", "Home", "End"}
