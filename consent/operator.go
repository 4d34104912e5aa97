package consent

import (
	"time"

	"github.com/tabwarden/tabwarden/consent/audit"
)

// Operator is who made a decision, take-over or resume (DESIGN §4, §11):
// the console's own terminal (LocalOperator) or an operator on an SSH
// screen, named by the comment of their verified key in the authorized
// keys file and identified by that key's fingerprint.
type Operator struct {
	Name        string
	Fingerprint string // SHA256:… of the verified key; empty for the local terminal
}

// LocalOperator is the console's own terminal.
var LocalOperator = Operator{Name: "local"}

func (o Operator) orLocal() Operator {
	if o.Name == "" {
		return LocalOperator
	}
	return o
}

// Decision is one operator's answer to a review.
type Decision struct {
	Review  string
	Approve bool
	By      Operator
	// SeenAt is when the review appeared on the deciding operator's own
	// screen (each screen renders a change at its own moment). The
	// key-ahead guard counts from the later of SeenAt and the moment the
	// engine put the review on screen; zero counts from the latter alone.
	SeenAt time.Time
}

// DecideAs resolves the focused review on behalf of d.By, with the
// key-ahead guard counted per screen (d.SeenAt). The first decision wins:
// a later one gets ErrNoSuchReview. Errors are Decide's.
func (e *Engine) DecideAs(d Decision) error { return e.decideAs(d) }

// TakeOverAs is TakeOver by op; every screen shows who took over
// (ConversationState.PausedBy).
func (e *Engine) TakeOverAs(conv ConversationID, op Operator) error { return e.takeOverAs(conv, op) }

// ResumeAs is Resume by op. A resume by another operator than the one who
// took over is allowed (the screen asks for an explicit second `r`) and
// audited as such: its record's Note names the operator who took over.
func (e *Engine) ResumeAs(conv ConversationID, op Operator) error { return e.resumeAs(conv, op) }

func (e *impl) decide(id string, approve bool) error {
	return e.decideAs(Decision{Review: id, Approve: approve, By: LocalOperator})
}

func (e *impl) takeOver(id ConversationID) error { return e.takeOverAs(id, LocalOperator) }

func (e *impl) resume(id ConversationID) error { return e.resumeAs(id, LocalOperator) }

func withOperator(rec audit.Record, op Operator) audit.Record {
	rec.Operator = op.Name
	rec.KeyFingerprint = op.Fingerprint
	return rec
}
