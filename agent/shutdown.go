package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

// ErrShuttingDown is the cause Shutdown cancels running calls with.
var ErrShuttingDown = errors.New("the console is shutting down")

// ShutdownGrace is how long a console shutdown waits for in-flight calls to
// end with their results (design.md §5: every call gets a result).
const ShutdownGrace = 3 * time.Second

// Shutdown withdraws every call in flight and refuses new ones: each ends
// with a canceled result naming the shutdown — one whose action was already
// dispatched says dispatched and mayHaveChangedState — and its audit record
// says the same. It returns when all of them have returned (and their
// audit records are written) or ctx is done, whichever is first; the error
// is ctx's then. Idempotent.
func (d *Dispatcher) Shutdown(ctx context.Context) error {
	return d.calls.drain(ctx)
}

// Withdraw is Shutdown without the wait: running calls are cancelled with
// the shutdown reason and new ones refused, and it returns at once (the
// TUI calls it on its own goroutine when the operator quits).
func (d *Dispatcher) Withdraw() { d.calls.shutdown() }

// shutdownResult names the shutdown in the failure of a call that
// Shutdown cancelled, and says whether it did. Only canceled failures are
// the shutdown's doing; a call that failed otherwise, or finished, keeps
// its own result.
func shutdownResult(ctx context.Context, res Result) (Result, bool) {
	if !res.IsError || res.Code() != string(errcode.Canceled) || context.Cause(ctx) != ErrShuttingDown {
		return res, false
	}
	dispatched, _ := res.Object["dispatched"].(bool)
	changed, _ := res.Object["mayHaveChangedState"].(bool)
	return fail(withdrawn(&errcode.Error{Dispatched: dispatched, MayHaveChangedState: changed})), true
}

// withdrawn is the error of a call the shutdown ended; was says what had
// already reached the page (nil: nothing).
func withdrawn(was *errcode.Error) *errcode.Error {
	if was != nil && (was.Dispatched || was.MayHaveChangedState) {
		return &errcode.Error{
			Code:       errcode.Canceled,
			Message:    "the console shut down while this call ran: its action was already dispatched and may have changed the page; observe it when the console is back before doing anything else",
			Dispatched: true, MayHaveChangedState: true, Next: errcode.NextObserveBeforeRetry,
		}
	}
	return errcode.Errorf(errcode.Canceled, errcode.NextListTabs, "withdrawn by shutdown: the console is shutting down; any review this call waited on was withdrawn and nothing it would have allowed ran")
}

// inflight tracks running calls so Shutdown can cancel them and wait.
type inflight struct {
	mu      sync.Mutex
	closing bool
	running map[*callSlot]struct{}
	idle    chan struct{} // closed when running empties during a drain
}

type callSlot struct{ cancel context.CancelCauseFunc }

// begin registers a call; after shutdown the returned context is already
// cancelled with ErrShuttingDown. end must be called when the call's
// result and audit record are done.
func (f *inflight) begin(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing {
		cancel(ErrShuttingDown)
		return ctx, func() {}
	}
	if f.running == nil {
		f.running = map[*callSlot]struct{}{}
	}
	slot := &callSlot{cancel: cancel}
	f.running[slot] = struct{}{}
	return ctx, func() {
		cancel(nil)
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.running, slot)
		if len(f.running) == 0 && f.idle != nil {
			close(f.idle)
			f.idle = nil
		}
	}
}

// shutdown refuses new calls and cancels the running ones; it returns a
// channel closed when none runs.
func (f *inflight) shutdown() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closing = true
	for slot := range f.running {
		slot.cancel(ErrShuttingDown)
	}
	if len(f.running) == 0 {
		done := make(chan struct{})
		close(done)
		return done
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	return f.idle
}

func (f *inflight) drain(ctx context.Context) error {
	select {
	case <-f.shutdown():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
