package browser

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// FormField is one input of a form, by its name attribute, and the text the
// operator types into it.
type FormField struct {
	Name, Text string
}

// The operator verbs are the person's hands on a tab they have taken over,
// for a run without a window (the headless demo): typed CDP input on the
// tab's session, never script in the page. Their requests go through the
// request hook as the person's own would: policy applies, and since the
// conversation is paused no navigation consent is asked and no grant is
// created. They refuse a tab whose conversation is not taken over
// (invalid_action), so no agent path can use them to skip a review.

// OperatorSubmitForm focuses each named field of the tab's first form in
// turn, replaces its text with the field's text, and presses Enter in the
// last one, which submits the form as a person's keyboard would. It
// returns once the key is sent; the caller waits for the site's answer.
// Errors: invalid_action (not taken over, no such field), tab_closed,
// wrong_conversation, browser_unavailable, browser_operation_failed.
func (b *Browser) OperatorSubmitForm(ctx context.Context, conv consent.ConversationID, id consent.TabID, fields []FormField) error {
	if len(fields) == 0 {
		return errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "no form field to fill")
	}
	c, cancel, err := b.operatorClient(ctx, conv, id)
	if err != nil {
		return err
	}
	defer cancel()
	doc, err := proto.DOMGetDocument{Depth: new(int)}.Call(c)
	if err != nil {
		return b.opFailed("read the page", err)
	}
	for i, f := range fields {
		q, err := proto.DOMQuerySelector{NodeID: doc.Root.NodeID, Selector: "form [name=" + strconv.Quote(f.Name) + "]"}.Call(c)
		if err != nil {
			return b.opFailed("find field "+f.Name, err)
		}
		if q.NodeID == 0 {
			return errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "the page has no form field %q", f.Name)
		}
		if err := (proto.DOMFocus{NodeID: q.NodeID}).Call(c); err != nil {
			return b.opFailed("focus field "+f.Name, err)
		}
		if err := operatorReplaceText(c, f.Text); err != nil {
			return b.opFailed("type into field "+f.Name, err)
		}
		if i == len(fields)-1 {
			if err := operatorEnter(c); err != nil {
				return b.opFailed("submit the form", err)
			}
		}
	}
	return nil
}

// OperatorOpen loads rawURL in the tab as the operator typing it in the
// address bar would (Page.navigate, not marked as an agent navigation). It
// returns once Chromium has started the load.
// Errors: invalid_url, invalid_action (not taken over), tab_closed,
// wrong_conversation, the policy refusal, browser_unavailable,
// browser_operation_failed.
func (b *Browser) OperatorOpen(ctx context.Context, conv consent.ConversationID, id consent.TabID, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errcode.Errorf(errcode.InvalidURL, errcode.NextNone, "only http and https URLs can be opened")
	}
	c, cancel, err := b.operatorClient(ctx, conv, id)
	if err != nil {
		return err
	}
	defer cancel()
	res, err := proto.PageNavigate{URL: u.String()}.Call(c)
	if err != nil {
		return b.opFailed("navigate", err)
	}
	if res.ErrorText != "" {
		t, lerr := b.reg.lookup(conv, id)
		if lerr == nil {
			b.reg.mu.Lock()
			denial := t.denial
			b.reg.mu.Unlock()
			if denial != nil {
				return denial
			}
		}
		return b.opFailed("navigate", fmt.Errorf("%s", res.ErrorText))
	}
	return nil
}

// operatorClient checks that conv's tab id is the operator's to drive
// (the conversation is taken over) and returns a client on its session
// with the call deadline.
func (b *Browser) operatorClient(ctx context.Context, conv consent.ConversationID, id consent.TabID) (client, context.CancelFunc, error) {
	if err := b.alive(); err != nil {
		return client{}, nil, err
	}
	t, err := b.reg.lookup(conv, id)
	if err != nil {
		return client{}, nil, err
	}
	if !b.gate.Paused(conv) {
		return client{}, nil, errcode.Errorf(errcode.InvalidAction, errcode.NextNone,
			"the operator's hands act only on a tab they have taken over")
	}
	b.reg.mu.Lock()
	t.denial = nil
	b.reg.mu.Unlock()
	cctx, cancel := b.call(ctx)
	sid, err := b.attach(cctx, t)
	if err != nil {
		cancel()
		return client{}, nil, b.opFailed("attach to the tab", err)
	}
	return client{b: b, sid: sid, ctx: cctx}, cancel, nil
}

// operatorReplaceText selects the focused field's text (the editing
// command, as Ctrl+A) and types text over it.
func operatorReplaceText(c client, text string) error {
	for _, typ := range []proto.InputDispatchKeyEventType{proto.InputDispatchKeyEventTypeRawKeyDown, proto.InputDispatchKeyEventTypeKeyUp} {
		ev := proto.InputDispatchKeyEvent{Type: typ, Key: "a", Code: "KeyA", WindowsVirtualKeyCode: 65, Modifiers: 2}
		if typ == proto.InputDispatchKeyEventTypeRawKeyDown {
			ev.Commands = []string{"selectAll"}
		}
		if err := ev.Call(c); err != nil {
			return err
		}
	}
	if text == "" {
		for _, typ := range []proto.InputDispatchKeyEventType{proto.InputDispatchKeyEventTypeRawKeyDown, proto.InputDispatchKeyEventTypeKeyUp} {
			if err := (proto.InputDispatchKeyEvent{Type: typ, Key: "Delete", Code: "Delete", WindowsVirtualKeyCode: 46}).Call(c); err != nil {
				return err
			}
		}
		return nil
	}
	return proto.InputInsertText{Text: text}.Call(c)
}

// operatorEnter presses and releases Enter in the focused field.
func operatorEnter(c client) error {
	for _, ev := range []proto.InputDispatchKeyEvent{
		{Type: proto.InputDispatchKeyEventTypeKeyDown, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, Text: "\r", UnmodifiedText: "\r"},
		{Type: proto.InputDispatchKeyEventTypeKeyUp, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13},
	} {
		if err := ev.Call(c); err != nil {
			return err
		}
	}
	return nil
}
