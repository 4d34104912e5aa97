package agent

import (
	"context"
	"strings"

	"github.com/tabwarden/tabwarden/browser/dom"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// assertions are the checks of browser_verify and a batch's verify steps.
var assertions = []any{dom.TextContains, dom.TextAbsent, dom.URLIs, dom.TitleContains, dom.ElementVisible}

// verifyTool is browser_verify (design.md §5).
var verifyTool = NewTool(ToolSpec{
	Name:  "browser_verify",
	Title: "Verify a page",
	Description: "Check one assertion on one of your tabs without acting: text_contains, text_absent, url_is, title_contains or element_visible (role and name, e.g. `button \"Save\"`)." +
		" Returns verified:true or false with evidence. Use it after browser_act to confirm an outcome; a stale page or timeout is never verified:true." + descTabID + descUntrusted,
	ReadOnly: true,
	Refine:   refine(enum(assertions, "assertion")),
}, (*Dispatcher).verify)

// VerifyArgs are browser_verify's arguments (the input schema is inferred from them; the jsonschema tags are what the model reads).
type VerifyArgs struct {
	TabID     string `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	Assertion string `json:"assertion" jsonschema:"text_contains, text_absent, url_is, title_contains or element_visible"`
	Value     string `json:"value" jsonschema:"text, URL or title to check; for element_visible: role and name as 'button \"Save\"'"`
}

// checkAssertion validates a verify (browser_verify or a batch step) before
// anything touches the page.
func checkAssertion(assertion, value string) error {
	if strings.TrimSpace(value) == "" {
		return errcode.Errorf(errcode.InvalidAssertion, errcode.NextNone, "an assertion needs a non-empty value")
	}
	switch assertion {
	case dom.TextContains, dom.TextAbsent, dom.URLIs, dom.TitleContains, dom.ElementVisible:
		return nil
	}
	return errcode.Errorf(errcode.InvalidAssertion, errcode.NextNone, "assertion must be text_contains, text_absent, url_is, title_contains or element_visible")
}

func (d *Dispatcher) verify(ctx context.Context, conv consent.ConversationID, a VerifyArgs) (Result, consent.TabID) {
	if err := checkAssertion(a.Assertion, a.Value); err != nil {
		return fail(err), ""
	}
	p, res, tab := d.beginPage(ctx, conv, a.TabID, "verify")
	if p == nil {
		return res, tab
	}
	defer p.op.End()
	vr, err := p.dt.Verify(p.op.Context(), a.Assertion, a.Value)
	if err != nil {
		return fail(opErr(p.op, err)), tab
	}
	return ok(map[string]any{"verified": vr.Verified, "evidence": vr.Evidence, "trust": TrustUntrusted}), tab
}
