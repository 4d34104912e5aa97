package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Shutdown cancels every running call with ErrShuttingDown, waits for each
// to end, and refuses later ones with an already-cancelled context.
func TestInflightShutdown(t *testing.T) {
	var f inflight
	ctx1, end1 := f.begin(context.Background())
	ctx2, end2 := f.begin(context.Background())
	drained := make(chan error, 1)
	go func() { drained <- f.drain(context.Background()) }()
	for _, ctx := range []context.Context{ctx1, ctx2} {
		<-ctx.Done()
		if context.Cause(ctx) != ErrShuttingDown {
			t.Fatalf("cause %v, want ErrShuttingDown", context.Cause(ctx))
		}
	}
	end1()
	select {
	case err := <-drained:
		t.Fatalf("Shutdown returned (%v) while a call still ran", err)
	case <-time.After(50 * time.Millisecond):
	}
	end2()
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	late, end := f.begin(context.Background())
	defer end()
	if context.Cause(late) != ErrShuttingDown {
		t.Fatalf("a call after shutdown: cause %v", context.Cause(late))
	}

	var g inflight
	_, stuck := g.begin(context.Background())
	defer stuck()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("drain past its deadline: %v", err)
	}
}

// A canceled result of a call the shutdown ended names the shutdown and
// keeps what was dispatched; other results are left alone.
func TestShutdownResult(t *testing.T) {
	down, cancel := context.WithCancelCause(context.Background())
	cancel(ErrShuttingDown)
	other, cancel2 := context.WithCancel(context.Background())
	cancel2()

	dispatched := fail(&errcode.Error{Code: errcode.Canceled, Message: "the caller canceled the operation", Dispatched: true, MayHaveChangedState: true})
	res, named := shutdownResult(down, dispatched)
	if !named || res.Code() != "canceled" || res.Object["dispatched"] != true || res.Object["mayHaveChangedState"] != true ||
		res.Object["next"] != "observe_before_retry" || !strings.Contains(res.Object["error"].(string), "shut down") {
		t.Fatalf("dispatched act at shutdown: %v (named %v)", res.Object, named)
	}
	pending := fail(errcode.Errorf(errcode.Canceled, errcode.NextNone, "the request was canceled while waiting for review"))
	res, named = shutdownResult(down, pending)
	if !named || res.Object["dispatched"] != false || res.Object["mayHaveChangedState"] != false ||
		!strings.Contains(res.Object["error"].(string), "withdrawn by shutdown") {
		t.Fatalf("pending review at shutdown: %v (named %v)", res.Object, named)
	}
	for name, c := range map[string]struct {
		ctx context.Context
		res Result
	}{
		"cancel without shutdown": {other, pending},
		"own failure":             {down, fail(errcode.Errorf(errcode.UserDenied, errcode.NextNone, "denied"))},
		"success":                 {down, ok(map[string]any{"dispatched": true})},
	} {
		got, named := shutdownResult(c.ctx, c.res)
		if named || got.JSON() != c.res.JSON() {
			t.Errorf("%s: rewritten to %v", name, got.Object)
		}
	}
}
