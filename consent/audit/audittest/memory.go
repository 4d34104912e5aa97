// Package audittest holds the audit Sink that tests of other packages
// record into. It is imported by tests only, so nothing of it reaches the
// shipped binary.
package audittest

import (
	"context"
	"slices"
	"sync"

	"github.com/tabwarden/tabwarden/consent/audit"
)

// Memory is an in-memory audit.Sink. It is safe for
// concurrent use, keeps every record in write order and, unlike FileLog,
// stores records exactly as given (a zero Time stays zero) so tests can
// compare them.
type Memory struct {
	mu      sync.Mutex
	recs    []audit.Record
	err     error
	changed chan struct{} // closed and replaced on every successful Write
}

// Write appends rec, or returns the error set by FailWith without
// recording anything.
func (m *Memory) Write(rec audit.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	m.recs = append(m.recs, rec)
	if m.changed != nil {
		close(m.changed)
		m.changed = nil
	}
	return nil
}

// FailWith makes every later Write fail with err (nil restores normal
// writes), so callers' fail-closed paths can be tested.
func (m *Memory) FailWith(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err = err
}

// Records returns a copy of the records written so far.
func (m *Memory) Records() []audit.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.recs)
}

// Kind returns the records of kind written so far, in order.
func (m *Memory) Kind(kind audit.Kind) []audit.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []audit.Record
	for _, r := range m.recs {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// WaitFor blocks until a record for which match is true has been written
// (including one written before the call) and returns the first such
// record, or returns ctx's error. It lets tests wait on a signal instead of
// sleeping.
func (m *Memory) WaitFor(ctx context.Context, match func(audit.Record) bool) (audit.Record, error) {
	seen := 0
	for {
		// match runs without the lock held so it may call back into m.
		m.mu.Lock()
		fresh := slices.Clone(m.recs[seen:])
		seen = len(m.recs)
		if m.changed == nil {
			m.changed = make(chan struct{})
		}
		ch := m.changed
		m.mu.Unlock()
		for _, r := range fresh {
			if match(r) {
				return r, nil
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return audit.Record{}, ctx.Err()
		}
	}
}
