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

func withOperator(rec audit.Record, op Operator) audit.Record {
	rec.Operator = op.Name
	rec.KeyFingerprint = op.Fingerprint
	return rec
}
