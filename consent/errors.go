package consent

import (
	"errors"
	"fmt"
)

// Code is one of the error codes of DESIGN §5. Every error that can reach an
// agent carries exactly one of these names; packages above consent map their
// own failures onto them at the edge.
type Code string

// The DESIGN §5 codes. Use these constants, never string literals, so a typo
// is a compile error rather than a new wire value.
const (
	CodeMissingSession         Code = "missing_session"
	CodePaused                 Code = "paused"
	CodeInvalidURL             Code = "invalid_url"
	CodeBusy                   Code = "busy"
	CodeTimeout                Code = "timeout"
	CodeWebsiteBlocked         Code = "website_blocked"
	CodeTabClosed              Code = "tab_closed"
	CodeWrongConversation      Code = "wrong_conversation"
	CodePageChanged            Code = "page_changed"
	CodeNeedsAttention         Code = "needs_attention"
	CodeUserDenied             Code = "user_denied"
	CodeCanceled               Code = "canceled"
	CodeSignInRequired         Code = "sign_in_required"
	CodeStaleObservation       Code = "stale_observation"
	CodeStaleElement           Code = "stale_element"
	CodeInvalidAction          Code = "invalid_action"
	CodeImageRequired          Code = "image_required"
	CodeInvalidKey             Code = "invalid_key"
	CodeInvalidScroll          Code = "invalid_scroll"
	CodeElementDisabled        Code = "element_disabled"
	CodeElementOutsideViewport Code = "element_outside_viewport"
	CodeElementObscured        Code = "element_obscured"
	CodeNotEditable            Code = "not_editable"
	CodeOutsideViewport        Code = "outside_viewport"
	CodeTabLimit               Code = "tab_limit"
	CodeUnsupportedBrowser     Code = "unsupported_browser"
	CodeBrowserUnavailable     Code = "browser_unavailable"
	CodeBrowserOperationFailed Code = "browser_operation_failed"

	CodeInvalidSiteTool   Code = "invalid_site_tool"
	CodeUnsupportedSchema Code = "unsupported_schema"
	CodeStaleTool         Code = "stale_tool"
	CodeInvalidInput      Code = "invalid_input"
	CodeTooManyRequests   Code = "too_many_requests"
	CodeExecutionTimeout  Code = "execution_timeout"
	CodeDisclosureTimeout Code = "disclosure_timeout"
	CodeInvalidResult     Code = "invalid_result"
	CodeResultTooLarge    Code = "result_too_large"
	CodeResultWithheld    Code = "result_withheld"

	CodeJobPending Code = "job_pending"
	CodeJobUnknown Code = "job_unknown"

	CodeInvalidAssertion Code = "invalid_assertion"

	CodeUploadBlocked  Code = "upload_blocked"
	CodeUploadTooLarge Code = "upload_too_large"
)

// Next tells the agent what to do after a failure (DESIGN §5 "next").
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

// Is lets errors.Is match on the code alone: errors.Is(err, &Error{Code: CodeBusy}).
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

// CodeOf returns the DESIGN code carried by err, or browser_operation_failed
// for an error that carries none (an internal failure is still a failure the
// agent must see with a code).
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeBrowserOperationFailed
}
