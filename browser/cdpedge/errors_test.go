package cdpedge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

func TestFailedMapsEachCauseOnce(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), 0)
	defer cancel2()
	coded := errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "closed")
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want errcode.Code
	}{
		{"coded error keeps its code", context.Background(), coded, errcode.TabClosed},
		{"canceled call", context.Background(), fmt.Errorf("call: %w", context.Canceled), errcode.Canceled},
		{"canceled context", canceled, errors.New("websocket closed"), errcode.Canceled},
		{"deadline", expired, errors.New("no answer"), errcode.Timeout},
		{"document gone", context.Background(), errors.New("{-32000 Cannot find context with specified id}"), errcode.StaleObservation},
		{"anything else", context.Background(), errors.New("read: connection reset by peer"), errcode.BrowserOperationFailed},
	} {
		got := errcode.Of(Failed(c.ctx, "read the page", c.err))
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestSilentKeepsTheBrowsersWordsOut(t *testing.T) {
	err := Silent(context.Background(), "list site tools", errors.New("Uncaught secret-from-the-site"))
	if strings.Contains(err.Error(), "secret") || errcode.Of(err) != errcode.BrowserOperationFailed {
		t.Fatalf("Silent = %v", err)
	}
	if err := Failed(context.Background(), "read", errors.New("boom")); !strings.Contains(err.Error(), "boom") {
		t.Fatalf("Failed dropped the browser's words: %v", err)
	}
}

func TestAfterInputIsDispatched(t *testing.T) {
	err := AfterInput(context.Background(), "click", errors.New("Execution context was destroyed"))
	var ce *errcode.Error
	if !errors.As(err, &ce) || !ce.Dispatched || !ce.MayHaveChangedState || ce.Code != errcode.BrowserOperationFailed || ce.Next != errcode.NextObserveBeforeRetry {
		t.Fatalf("AfterInput = %+v, want a dispatched browser_operation_failed", ce)
	}
	coded := errcode.Errorf(errcode.Timeout, errcode.NextObserve, "late")
	if out := Dispatched(coded); out == error(coded) || coded.Dispatched {
		t.Fatal("Dispatched must not change the error it was given")
	}
}
