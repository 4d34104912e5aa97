package browser

import (
	"context"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// The operator's input from the page view (design.md §13): typed keys and
// clicks on a tab of a conversation the operator has taken over, sent
// with CDP Input. Outside a take-over they are refused here as well as in
// the TUI, so no key or click reaches a page the agent drives. What the
// page then does (a form post, a navigation) passes the request hook like
// any operator navigation of a taken-over tab: policy applies.

// pageKeys are the named keys the page view sends: DOM key, code and
// Windows virtual key code.
var pageKeys = map[string]struct {
	code string
	vk   int
	text string
}{
	"Enter":      {"Enter", 13, "\r"},
	"Tab":        {"Tab", 9, ""},
	"Backspace":  {"Backspace", 8, ""},
	"Delete":     {"Delete", 46, ""},
	"Escape":     {"Escape", 27, ""},
	"ArrowLeft":  {"ArrowLeft", 37, ""},
	"ArrowRight": {"ArrowRight", 39, ""},
	"ArrowUp":    {"ArrowUp", 38, ""},
	"ArrowDown":  {"ArrowDown", 40, ""},
	"Home":       {"Home", 36, ""},
	"End":        {"End", 35, ""},
	"PageUp":     {"PageUp", 33, ""},
	"PageDown":   {"PageDown", 34, ""},
	" ":          {"Space", 32, " "},
}

// takenOver is a client of tab's session, under ctx, when its
// conversation is taken over; an error (and nothing sent) otherwise.
func (b *Browser) takenOver(ctx context.Context, id consent.TabID) (client, error) {
	if err := b.alive(); err != nil {
		return client{}, err
	}
	b.reg.mu.Lock()
	t := b.reg.byID[id]
	var conv consent.ConversationID
	if t != nil && !t.closed {
		conv = t.conv
	}
	b.reg.mu.Unlock()
	if t == nil || t.closed {
		return client{}, errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "tab %s is closed", id)
	}
	if conv == "" || !b.gate.Paused(conv) {
		return client{}, errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "the page view sends input only during a take-over of the tab's conversation")
	}
	sid, err := b.session(ctx, t)
	if err != nil {
		return client{}, err
	}
	return client{b: b, sid: sid, ctx: ctx}, nil
}

// PageKey types into tab: key is a DOM key name (Enter, Tab, Backspace,
// arrows…) or empty, text the characters of a printable key. Only during
// a take-over of the tab's conversation.
func (b *Browser) PageKey(ctx context.Context, id consent.TabID, key, text string) error {
	cctx, cancel := b.call(ctx)
	defer cancel()
	c, err := b.takenOver(cctx, id)
	if err != nil {
		return err
	}
	down := proto.InputDispatchKeyEvent{Type: proto.InputDispatchKeyEventTypeKeyDown, Key: key, Text: text}
	if k, ok := pageKeys[key]; ok {
		down.Code, down.WindowsVirtualKeyCode, down.Text = k.code, k.vk, k.text
	} else if key == "" {
		if text == "" {
			return nil
		}
		down.Key = text
		if r := []rune(text); len(r) == 1 && r[0] < 128 {
			down.WindowsVirtualKeyCode = int(upperASCII(r[0]))
		}
	} else {
		return errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "key %q is not one the page view sends", key)
	}
	if down.Text == "" {
		down.Type = proto.InputDispatchKeyEventTypeRawKeyDown
	}
	if err := down.Call(c); err != nil {
		return b.opFailed("type into the page", err)
	}
	up := down
	up.Type, up.Text = proto.InputDispatchKeyEventTypeKeyUp, ""
	if err := up.Call(c); err != nil {
		return b.opFailed("type into the page", err)
	}
	return nil
}

func upperASCII(r rune) rune {
	if r >= 'a' && r <= 'z' {
		return r - 'a' + 'A'
	}
	return r
}

// PageClick clicks tab at the viewport point x, y (CSS pixels) with the
// left button. Only during a take-over of the tab's conversation.
func (b *Browser) PageClick(ctx context.Context, id consent.TabID, x, y float64) error {
	cctx, cancel := b.call(ctx)
	defer cancel()
	c, err := b.takenOver(cctx, id)
	if err != nil {
		return err
	}
	for _, ev := range []proto.InputDispatchMouseEvent{
		{Type: proto.InputDispatchMouseEventTypeMouseMoved, X: x, Y: y},
		{Type: proto.InputDispatchMouseEventTypeMousePressed, X: x, Y: y, Button: proto.InputMouseButtonLeft, Buttons: gson1(), ClickCount: 1},
		{Type: proto.InputDispatchMouseEventTypeMouseReleased, X: x, Y: y, Button: proto.InputMouseButtonLeft, ClickCount: 1},
	} {
		if err := ev.Call(c); err != nil {
			return b.opFailed("click the page", err)
		}
	}
	return nil
}

func gson1() *int {
	one := 1
	return &one
}
