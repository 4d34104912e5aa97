package consent

import "github.com/tabwarden/tabwarden/consent/audit"

// Listen registers a listener for control events; events are delivered in
// order and never dropped. The returned func unregisters.
func (e *Engine) Listen(fn func(Event)) func() { return e.disp.add(fn) }

// Note appends a line to the activity log (never site content).
func (e *Engine) Note(id ConversationID, text string, warn bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.addActivityLocked(id, text, warn)
	e.commitLocked()
}

// announceLocked ends an operator's (or the engine's own) change to
// conversation ev.Conversation, in the one order every such change keeps:
// the audit record first (rec, its Conversation filled in), then the
// activity line, then ev to listeners, and commitLocked last, so the
// snapshot a subscriber reads already holds the line.
func (e *Engine) announceLocked(ev Event, rec audit.Record, line string, warn bool) {
	rec.Conversation = string(ev.Conversation)
	e.auditLocked(rec)
	e.addActivityLocked(ev.Conversation, line, warn)
	e.emitLocked(ev)
	e.commitLocked()
}

// auditLocked writes rec synchronously. A failure changes no outcome: it
// is surfaced as a warning line (writeAuditLocked) so the operator knows
// the log has a gap.
func (e *Engine) auditLocked(rec audit.Record) {
	_ = e.writeAuditLocked(rec) // already reported as the warning line
}

// writeAuditLocked is auditLocked returning the failure, for the one
// caller whose outcome it changes: an approval whose record cannot be
// written fails closed (resolveLocked).
func (e *Engine) writeAuditLocked(rec audit.Record) error {
	if e.cfg.Audit == nil {
		return nil
	}
	rec.Time = e.now()
	if c, ok := e.convs[ConversationID(rec.Conversation)]; ok && rec.Client == "" {
		rec.Client = c.name
	}
	err := e.cfg.Audit.Write(rec)
	if err != nil {
		e.addActivityLocked(ConversationID(rec.Conversation), "audit write failed: "+err.Error(), true)
	}
	return err
}

func (e *Engine) addActivityLocked(id ConversationID, text string, warn bool) {
	e.activity = append(e.activity, Activity{Time: e.now(), Conversation: id, Name: e.names[id], Text: text, Warn: warn})
	if n := len(e.activity) - ActivityLimit; n > 0 {
		e.activity = append(e.activity[:0:0], e.activity[n:]...)
	}
}

func (e *Engine) emitLocked(ev Event) {
	if e.closed {
		return
	}
	e.disp.push(ev)
}
