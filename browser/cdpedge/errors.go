package cdpedge

import (
	"context"
	"errors"
	"strings"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Failed maps the failure of a call into Chromium made before any input
// reached the page onto its design.md §5 code: ctx ending is canceled or
// timeout, a document that went away under the call is stale_observation,
// anything else browser_operation_failed with the browser's own words. An
// error that already carries a code keeps it. what names the step for the
// message ("read the page").
func Failed(ctx context.Context, what string, err error) error {
	return failed(ctx, what, err, true)
}

// Silent is Failed without the browser's words in the message, for calls
// whose errors may carry site content that must not reach the agent (a
// site tool's exception, say).
func Silent(ctx context.Context, what string, err error) error {
	return failed(ctx, what, err, false)
}

func failed(ctx context.Context, what string, err error, detail bool) error {
	var ce *errcode.Error
	if errors.As(err, &ce) {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled) || (ctx != nil && errors.Is(ctx.Err(), context.Canceled)):
		return errcode.Errorf(errcode.Canceled, errcode.NextNone, "%s: canceled", what)
	case errors.Is(err, context.DeadlineExceeded) || (ctx != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)):
		return errcode.Errorf(errcode.Timeout, errcode.NextObserve, "%s: timed out", what)
	case Gone(err):
		return errcode.Errorf(errcode.StaleObservation, errcode.NextObserve, "%s: the page navigated", what)
	case !detail:
		return errcode.Errorf(errcode.BrowserOperationFailed, errcode.NextObserve, "%s: the browser did not answer", what)
	}
	return errcode.Errorf(errcode.BrowserOperationFailed, errcode.NextObserve, "%s: %v", what, err)
}

// AfterInput is Failed for a call after which input may have reached the
// page (Dispatched).
func AfterInput(ctx context.Context, what string, err error) error {
	return Dispatched(Failed(ctx, what, err))
}

// Dispatched is err (a coded error from Failed or Silent) for a call after
// which input may have reached the page: the outcome is unknown, so the
// agent must observe before anything else. A page that navigated under it
// is no stale observation then: the input may be why it navigated.
func Dispatched(err error) error {
	var ce *errcode.Error
	if !errors.As(err, &ce) {
		ce = &errcode.Error{Code: errcode.BrowserOperationFailed, Message: err.Error()}
	}
	out := *ce
	if out.Code == errcode.StaleObservation {
		out.Code = errcode.BrowserOperationFailed
	}
	out.Dispatched, out.MayHaveChangedState = true, true
	out.Next = errcode.NextObserveBeforeRetry
	return &out
}

// Gone reports whether err says the JavaScript context a call ran in no
// longer exists: the document navigated or was replaced under the call.
func Gone(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "Cannot find context") || strings.Contains(s, "Execution context was destroyed") ||
		strings.Contains(s, "Cannot find default execution context")
}
