// Package errcode holds the error codes of design.md §5 and the error
// envelope every layer returns to an agent. It imports nothing from the
// module, so consent, browser, webmcp, agent and the TUI can all share it.
package errcode

import (
	"errors"
	"fmt"
)

// Code is one of the error codes of design.md §5. Every error that can reach an
// agent carries exactly one of these names; packages above consent map their
// own failures onto them at the edge.
type Code string

// The design.md §5 codes. Use these constants, never string literals, so a typo
// is a compile error rather than a new wire value.
const (
	MissingSession         Code = "missing_session"
	Paused                 Code = "paused"
	InvalidURL             Code = "invalid_url"
	Busy                   Code = "busy"
	Timeout                Code = "timeout"
	WebsiteBlocked         Code = "website_blocked"
	TabClosed              Code = "tab_closed"
	WrongConversation      Code = "wrong_conversation"
	PageChanged            Code = "page_changed"
	NeedsAttention         Code = "needs_attention"
	UserDenied             Code = "user_denied"
	Canceled               Code = "canceled"
	SignInRequired         Code = "sign_in_required"
	StaleObservation       Code = "stale_observation"
	StaleElement           Code = "stale_element"
	InvalidAction          Code = "invalid_action"
	ImageRequired          Code = "image_required"
	InvalidKey             Code = "invalid_key"
	InvalidScroll          Code = "invalid_scroll"
	ElementDisabled        Code = "element_disabled"
	ElementOutsideViewport Code = "element_outside_viewport"
	ElementObscured        Code = "element_obscured"
	NotEditable            Code = "not_editable"
	OutsideViewport        Code = "outside_viewport"
	TabLimit               Code = "tab_limit"
	UnsupportedBrowser     Code = "unsupported_browser"
	BrowserUnavailable     Code = "browser_unavailable"
	BrowserOperationFailed Code = "browser_operation_failed"

	InvalidSiteTool   Code = "invalid_site_tool"
	UnsupportedSchema Code = "unsupported_schema"
	StaleTool         Code = "stale_tool"
	InvalidInput      Code = "invalid_input"
	TooManyRequests   Code = "too_many_requests"
	ExecutionTimeout  Code = "execution_timeout"
	DisclosureTimeout Code = "disclosure_timeout"
	InvalidResult     Code = "invalid_result"
	ResultTooLarge    Code = "result_too_large"
	ResultWithheld    Code = "result_withheld"

	JobPending Code = "job_pending"
	JobUnknown Code = "job_unknown"

	InvalidAssertion Code = "invalid_assertion"

	UploadBlocked  Code = "upload_blocked"
	UploadTooLarge Code = "upload_too_large"
)

// Next tells the agent what to do after a failure (design.md §5 "next").
type Next string

const (
	NextNone               Next = ""
	NextObserve            Next = "observe"
	NextObserveBeforeRetry Next = "observe_before_retry"
	NextReview             Next = "review"
	NextUserResume         Next = "user_resume"
	NextListTabs           Next = "list_tabs"
)

// Error is a failure an agent can see. Dispatched and MayHaveChangedState
// say whether anything reached the page; the engine never retries either way.
type Error struct {
	Code                Code
	Message             string
	Dispatched          bool
	MayHaveChangedState bool
	Next                Next
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Is lets errors.Is match on the code alone: errors.Is(err, &Error{Code: Busy}).
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.Code == e.Code
}

// Errorf builds an undispatched Error with a formatted message.
func Errorf(code Code, next Next, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Next: next}
}

// Of returns the design.md §5 code carried by err, or browser_operation_failed
// for an error that carries none (an internal failure is still a failure the
// agent must see with a code).
func Of(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return BrowserOperationFailed
}
