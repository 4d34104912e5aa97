package consent

import "context"

// WaitIdle blocks until no review is pending and no op runs (or the engine
// is closed), or ctx is done. Tests wait on it instead of sleeping; the
// console never needs it, so it is built with the tests only.
func (e *Engine) WaitIdle(ctx context.Context) error {
	changes, stop := e.Changes()
	defer stop()
	for {
		e.mu.Lock()
		idle := e.closed || (len(e.queue) == 0 && len(e.ops) == 0)
		e.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-changes:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
