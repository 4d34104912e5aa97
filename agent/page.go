package agent

import (
	"context"
	"errors"
	"net/url"
	"strconv"

	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/policy"
)

// liveTabs is conv's tabs in st that are not closed, and whether conv is
// paused: what browser_tabs, tabId defaulting and web_use's list_pages see.
func liveTabs(st consent.State, conv consent.ConversationID) (tabs []consent.TabState, paused bool) {
	for _, c := range st.Conversations {
		if c.ID != conv {
			continue
		}
		for _, t := range c.Tabs {
			if t.Status != consent.TabClosed {
				tabs = append(tabs, t)
			}
		}
		return tabs, c.Paused
	}
	return nil, false
}

// MaxURLBytes bounds a URL an agent may open or navigate to (8 KiB, the
// request-line limit of common web servers; docs/decisions.md).
const MaxURLBytes = 8 << 10

// checkURL accepts only absolute http(s) URLs with a host, no credentials,
// a port (when given) in 1–65535 and at most MaxURLBytes bytes (design.md §5
// invalid_url). It runs before any review and before any tab exists, so its
// failures point the agent at its tabs (list_tabs), never at a page to observe.
func checkURL(raw string) (*url.URL, error) {
	if len(raw) > MaxURLBytes {
		return nil, errcode.Errorf(errcode.InvalidURL, errcode.NextListTabs, "the URL is %d bytes; at most %d are accepted", len(raw), MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.Opaque != "" {
		return nil, errcode.Errorf(errcode.InvalidURL, errcode.NextListTabs, "use an absolute http or https URL without credentials")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, errcode.Errorf(errcode.InvalidURL, errcode.NextListTabs, "port %s is not a valid port (1 to 65535)", p)
		}
	}
	return u, nil
}

// precheckPolicy answers website_blocked before any tab or review exists (so
// next is list_tabs: nothing opened to observe); the request hook enforces the
// same policy on every request regardless.
func (d *Dispatcher) precheckPolicy(raw string) error {
	dec := d.policy.Decide(raw, "GET", false, false)
	if dec.Allow {
		return nil
	}
	return &errcode.Error{Code: errcode.Code(dec.Code), Message: dec.Message, Next: errcode.NextListTabs}
}

// readable runs the read gate for the tab's current origin and returns the
// tab's DOM handle. Every tool that looks at or acts on a page passes here.
func (d *Dispatcher) readable(op *consent.Op, conv consent.ConversationID, tab consent.TabID) (*browser.Handle, string, error) {
	dt, origin, _, err := d.readablePass(op, conv, tab)
	return dt, origin, err
}

// readablePass is readable also saying how the read gate passed (a scoped
// grant's id for the result to name).
func (d *Dispatcher) readablePass(op *consent.Op, conv consent.ConversationID, tab consent.TabID) (*browser.Handle, string, consent.Pass, error) {
	info, err := d.browser.Tab(tab)
	if err != nil {
		return nil, "", consent.Pass{}, err
	}
	origin, err := pageOrigin(info.URL)
	if err != nil {
		return nil, "", consent.Pass{}, err
	}
	pass, err := d.engine.AskGrant(op.Context(), consent.Request{
		Gate: consent.GateRead, Conversation: conv, Tab: tab, Origin: origin,
		Recheck: d.sameOrigin(tab, origin),
	})
	if err != nil {
		return nil, "", consent.Pass{}, err
	}
	dt, err := d.browser.Handle(op.Context(), conv, tab)
	if err != nil {
		return nil, "", consent.Pass{}, err
	}
	return dt, origin, pass, nil
}

// sameOrigin is the post-approval re-check: the page must still be on the
// origin the operator approved.
func (d *Dispatcher) sameOrigin(tab consent.TabID, origin string) func() error {
	return func() error {
		info, err := d.browser.Tab(tab)
		if err != nil {
			return err
		}
		now, err := pageOrigin(info.URL)
		if err != nil || now != origin {
			return errcode.Errorf(errcode.PageChanged, errcode.NextObserveBeforeRetry, "the page left %s while the review was open", origin)
		}
		if d.policy != nil && !d.policy.AllowsOrigin(origin) {
			return errcode.Errorf(errcode.WebsiteBlocked, errcode.NextNone, "%s", policy.MsgWebsiteBlocked)
		}
		return nil
	}
}

// pageOrigin is the exact origin of a tab URL; a blank tab has none to read.
func pageOrigin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errcode.Errorf(errcode.InvalidURL, errcode.NextNone, "the tab shows no web page (open a URL first)")
	}
	return u.Scheme + "://" + u.Host, nil
}

// resolveTab applies "tabId may be left out when the conversation owns
// exactly one tab"; it never guesses between several.
func (d *Dispatcher) resolveTab(conv consent.ConversationID, id string) (consent.TabID, error) {
	if id != "" {
		return consent.TabID(id), nil
	}
	open, _ := liveTabs(d.engine.Snapshot(), conv)
	switch len(open) {
	case 0:
		return "", errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "this conversation has no open tab: call browser_open")
	case 1:
		return open[0].ID, nil
	}
	return "", errcode.Errorf(errcode.InvalidAction, errcode.NextListTabs, "this conversation has %d tabs: pass tabId (see browser_tabs)", len(open))
}

func (d *Dispatcher) visible(conv consent.ConversationID, tab consent.TabID) bool {
	sel := d.engine.Snapshot().Selection
	return sel.Conversation == conv && sel.Tab == tab
}

// opErr prefers the op's own reason (take-over, cancel, deadline) over the
// symptom a browser call reports when its context ends, but keeps whether
// input was already dispatched.
func opErr(op *consent.Op, err error) error {
	why := op.Err()
	if why == nil {
		return err
	}
	var ce, oe *errcode.Error
	if !errors.As(why, &oe) {
		return err
	}
	if errors.As(err, &ce) && ce.Dispatched {
		out := *oe
		out.Dispatched, out.MayHaveChangedState = true, true
		out.Next = errcode.NextObserveBeforeRetry
		return &out
	}
	return oe
}

// pageOp is a running op on a readable page: the start every tool that looks
// at or acts on a page shares.
type pageOp struct {
	op     *consent.Op
	dt     *browser.Handle
	origin string
	read   consent.Pass // how the read gate passed
}

// beginPage resolves the tab, starts one op on it and passes the read gate.
// On failure p is nil, res is the envelope and the op has already ended.
func (d *Dispatcher) beginPage(ctx context.Context, conv consent.ConversationID, tabID, name string) (p *pageOp, res Result, tab consent.TabID) {
	tab, err := d.resolveTab(conv, tabID)
	if err != nil {
		return nil, fail(err), ""
	}
	op, err := d.engine.Begin(ctx, conv, tab, name)
	if err != nil {
		return nil, fail(err), tab
	}
	dt, origin, read, err := d.readablePass(op, conv, tab)
	if err != nil {
		res = fail(opErr(op, err))
		op.End()
		return nil, res, tab
	}
	return &pageOp{op: op, dt: dt, origin: origin, read: read}, Result{}, tab
}
