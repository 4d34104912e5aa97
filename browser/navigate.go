package browser

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// waitLoad waits for the load event of loader's document, at most
// cdpedge.Load: a page that never finishes loading is still a committed page.
func (b *Browser) waitLoad(ctx context.Context, t *tab, loader proto.NetworkLoaderID) {
	limit := time.NewTimer(cdpedge.Load)
	defer limit.Stop()
	b.reg.mu.Lock()
	navs := t.navs
	b.reg.mu.Unlock()
	for {
		b.reg.mu.Lock()
		done := t.closed || t.navs != navs || (t.loader == loader && t.lifecycle[proto.PageLifecycleEventNameLoad])
		ch := t.lifeCh
		b.reg.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-limit.C:
			return
		case <-ctx.Done():
			return
		case <-b.ctx.Done():
			return
		}
	}
}

// client is a proto.Client bound to a tab's session.
type client struct {
	b   *Browser
	sid proto.TargetSessionID
	ctx context.Context
}

func (c client) Call(ctx context.Context, _ string, method string, params any) ([]byte, error) {
	return c.b.rod().Call(ctx, string(c.sid), method, params)
}

func (c client) GetContext() context.Context { return c.ctx }

func (c client) GetSessionID() proto.TargetSessionID { return c.sid }

// opFailed is the error of a CDP call of the browser's own that failed:
// browser_unavailable while Chromium is gone, else the call's own code
// (cdpedge.Failed; the error itself says whether its context ended).
func (b *Browser) opFailed(what string, err error) error {
	if e := b.alive(); e != nil {
		return e
	}
	return cdpedge.Failed(context.Background(), what, err)
}

// Navigate loads rawURL in tab. The request hook asks navigation consent
// for the origin (and for each cross-origin redirect hop); ctx should be
// the operation's context, since a review may be waiting for the operator.
// A refusal comes back as the consent or policy error (user_denied,
// timeout, website_blocked…) and leaves the tab on about:blank.
func (b *Browser) Navigate(ctx context.Context, conv consent.ConversationID, id consent.TabID, rawURL string) error {
	if err := b.alive(); err != nil {
		return err
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errcode.Errorf(errcode.InvalidURL, errcode.NextNone, "only http and https URLs can be opened")
	}
	t, sid, err := b.agentNav(conv, id)
	if err != nil {
		return err
	}
	defer b.agentNavDone(t)
	b.reg.mu.Lock()
	sent := t.sent
	b.reg.mu.Unlock()
	nctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(b.ctx, stop)()
	res, err := proto.PageNavigate{URL: u.String()}.Call(client{b: b, sid: sid, ctx: nctx})
	if derr := b.navEnded(t); derr != nil {
		if b.isDenial(t, derr) {
			return derr
		}
		// Closed under the call (a crash kills every tab): the request
		// may already have reached the site.
		return b.reached(t, sent, derr)
	}
	switch {
	case err != nil:
		return b.reached(t, sent, b.opFailed("navigate", err))
	case res.ErrorText != "":
		if strings.Contains(res.ErrorText, "ERR_ABORTED") && b.gate.Paused(conv) {
			// The take-over stopped the tab's loading (takeOver) before
			// the hook's refusal of the held request set its denial: the
			// navigation ended because the operator took over.
			return b.reached(t, sent, errPaused())
		}
		if ne, ok := b.wallUnreached(res.ErrorText, u.String()); ok {
			return b.opFailed("navigate", fmt.Errorf("%s (tabwarden's network wall could not connect; nothing was sent)", ne))
		}
		err := b.opFailed("navigate", fmt.Errorf("%s", res.ErrorText))
		if neverSent(res.ErrorText) {
			return err
		}
		return b.reached(t, sent, err)
	}
	if res.LoaderID != "" {
		b.waitLoad(ctx, t, res.LoaderID)
	}
	return nil
}

// reached marks err dispatched when the hook let a main-frame request of t
// go to the site since sent was read: a navigation that fails after that
// (Chromium killed, the op cancelled, the connection reset) may have
// changed state on the site, and the agent must not read it as
// "nothing happened" (design.md §5 uncertain outcomes).
func (b *Browser) reached(t *tab, sent uint64, err error) error {
	b.reg.mu.Lock()
	moved := t.sent != sent
	b.reg.mu.Unlock()
	var ce *errcode.Error
	if !moved || !errors.As(err, &ce) {
		return err
	}
	out := *ce
	out.Dispatched, out.MayHaveChangedState = true, true
	out.Next = errcode.NextObserveBeforeRetry
	out.Message += " (the request may have reached the site)"
	return &out
}

// isDenial reports whether err is the hook's refusal of t's main-frame
// request (consent or policy): then nothing went to the site.
func (b *Browser) isDenial(t *tab, err error) bool {
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	return t.denial != nil && err == t.denial
}

// wallUnreached reports whether a navigation Chromium saw fail on a
// response was the wall's 502 for a destination it could not dial, naming
// that failure (package wall, Unreached).
func (b *Browser) wallUnreached(errorText, rawURL string) (string, bool) {
	if !strings.Contains(errorText, "ERR_HTTP_RESPONSE_CODE_FAILURE") {
		return "", false
	}
	c := b.conn()
	if c == nil || c.proc == nil || c.proc.wall == nil {
		return "", false
	}
	return c.proc.wall.Unreached(rawURL)
}

// neverSent reports the Chromium net errors of a request that never
// reached a server (no connection was made).
func neverSent(errorText string) bool {
	for _, e := range []string{"ERR_NAME_NOT_RESOLVED", "ERR_CONNECTION_REFUSED", "ERR_ADDRESS_UNREACHABLE",
		"ERR_ADDRESS_INVALID", "ERR_CONNECTION_TIMED_OUT", "ERR_UNSAFE_PORT", "ERR_INVALID_URL", "ERR_BLOCKED_BY_CLIENT",
		// The wall refused the tunnel, or could not be reached.
		"ERR_TUNNEL_CONNECTION_FAILED", "ERR_PROXY_CONNECTION_FAILED"} {
		if strings.Contains(errorText, e) {
			return true
		}
	}
	return false
}
