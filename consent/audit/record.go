// Package audit is the append-only JSONL audit log of DESIGN §9.
//
// Invariants: a record never holds page text, typed text, site-tool results
// or input values — only sizes, sha256 digests and a redacted input summary.
// Write returns only after the record is on disk (written and fsynced), so a
// decision is durable before the action it allows is dispatched. Records are
// never dropped: a write failure is returned to the caller, which must fail
// the operation closed.
package audit

import "time"

// Kind names what a record is about.
type Kind string

const (
	KindToolCall    Kind = "tool_call"
	KindReviewShown Kind = "review_shown"
	KindDecision    Kind = "decision"
	KindTakeOver    Kind = "take_over"
	KindResume      Kind = "resume"
	KindCancel      Kind = "cancel"
	KindRevoke      Kind = "revoke"
	KindPolicyBlock Kind = "policy_block"
	KindKeyIgnored  Kind = "key_ignored"
	KindSession     Kind = "session"
)

// Record is one line of the audit log. Omitted fields are left out of the JSON.
type Record struct {
	Time         time.Time `json:"time"`
	Kind         Kind      `json:"kind"`
	Conversation string    `json:"conversation,omitempty"`
	Tab          string    `json:"tab,omitempty"`
	Origin       string    `json:"origin,omitempty"`
	Gate         string    `json:"gate,omitempty"`
	Review       string    `json:"review,omitempty"` // review id
	ReviewKind   string    `json:"reviewKind,omitempty"`
	Decision     string    `json:"decision,omitempty"` // approved|denied|timeout|canceled|paused|revoked|needs_attention
	By           string    `json:"by,omitempty"`       // operator|engine|policy
	WaitMS       int64     `json:"waitMs,omitempty"`   // how long the review waited
	Tool         string    `json:"tool,omitempty"`     // MCP tool or site-tool name
	Action       string    `json:"action,omitempty"`   // act type
	Code         string    `json:"code,omitempty"`     // DESIGN §5 code of a failure
	Input        string    `json:"input,omitempty"`    // redacted input summary (Summarize)
	Size         int64     `json:"size,omitempty"`     // bytes of typed text / upload / result
	SHA256       string    `json:"sha256,omitempty"`   // digest of the same
	URL          string    `json:"url,omitempty"`      // blocked request URL (origin+path, no query)
	Note         string    `json:"note,omitempty"`
}

// Sink receives records. Write must not return before the record is durable.
type Sink interface {
	Write(Record) error
}
