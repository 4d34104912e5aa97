package agent

import (
	"encoding/json"
	"errors"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

// TrustUntrusted marks every site-derived string that travels to the model.
const TrustUntrusted = "untrusted-site-content"

// Result is one tool result: the JSON object (sent both as compact text
// content and as structuredContent), an optional PNG image block, and
// whether it is a tool error.
type Result struct {
	Object  map[string]any
	Image   []byte
	IsError bool
}

// JSON is the compact text form of the result object.
func (r Result) JSON() string {
	b, err := json.Marshal(r.Object)
	if err != nil {
		// Objects are built from plain values; a marshal failure is a bug,
		// but the agent must still get a well-formed failure.
		return `{"ok":false,"code":"browser_operation_failed","error":"result could not be encoded","dispatched":false,"mayHaveChangedState":false,"retrySafe":false,"next":"list_tabs","trust":"untrusted-site-content"}`
	}
	return string(b)
}

// Code returns the failure code of an error result ("" on success).
func (r Result) Code() string {
	c, _ := r.Object["code"].(string)
	return c
}

// ok builds a success envelope. Fields are copied over {"ok":true}.
func ok(fields map[string]any) Result {
	obj := map[string]any{"ok": true}
	for k, v := range fields {
		obj[k] = v
	}
	return Result{Object: obj}
}

// fail builds the design.md §5 failure envelope from any error. Errors without
// a code are internal failures: browser_operation_failed, and — since we
// cannot know better — reported as not dispatched only when the error says so.
func fail(err error) Result {
	var ce *errcode.Error
	if !errors.As(err, &ce) {
		ce = &errcode.Error{Code: errcode.BrowserOperationFailed, Message: err.Error(), Next: errcode.NextListTabs}
	}
	next := ce.Next
	if next == errcode.NextNone {
		next = defaultNext(ce)
	}
	return Result{IsError: true, Object: map[string]any{
		"ok":                  false,
		"code":                string(ce.Code),
		"error":               ce.Message,
		"dispatched":          ce.Dispatched,
		"mayHaveChangedState": ce.MayHaveChangedState || ce.Dispatched,
		// Never retry automatically: every failure says so, whatever its cause.
		"retrySafe": false,
		"next":      string(next),
		"trust":     TrustUntrusted,
	}}
}

// defaultNext picks the agent's next step for codes whose producer did not say.
func defaultNext(e *errcode.Error) errcode.Next {
	switch e.Code {
	case errcode.Paused, errcode.SignInRequired:
		return errcode.NextUserResume
	case errcode.TabClosed, errcode.WrongConversation, errcode.MissingSession,
		errcode.BrowserUnavailable, errcode.TabLimit:
		return errcode.NextListTabs
	case errcode.NeedsAttention, errcode.UserDenied, errcode.Timeout:
		return errcode.NextReview
	case errcode.StaleObservation, errcode.StaleElement, errcode.PageChanged,
		errcode.ElementObscured, errcode.ElementOutsideViewport, errcode.ElementDisabled:
		return errcode.NextObserveBeforeRetry
	}
	if e.Dispatched {
		return errcode.NextObserveBeforeRetry
	}
	return errcode.NextObserve
}
