package agent

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// flakyBrowser is down until up is set; only Available matters here.
type flakyBrowser struct {
	Browser
	up atomic.Bool
}

func (f *flakyBrowser) Available() error {
	if f.up.Load() {
		return nil
	}
	return errcode.Errorf(errcode.BrowserUnavailable, errcode.NextListTabs, "relaunching")
}

func TestWebUseWaitsForARestartingBrowser(t *testing.T) {
	eng := consent.New(consent.Config{})
	defer eng.Close()
	fb := &flakyBrowser{}
	d := &Dispatcher{engine: eng, browser: fb}
	done := make(chan error, 1)
	go func() { done <- d.awaitBrowser(context.Background()) }()
	// The relaunch ends by updating the header, which is the signal.
	fb.up.Store(true)
	eng.SetInfo(consent.Info{Browser: "Chromium back"})
	if err := <-done; err != nil {
		t.Fatalf("awaitBrowser = %v after the browser came back", err)
	}

	fb.up.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- d.awaitBrowser(ctx) }()
	cancel()
	if err := <-done; errcode.Of(err) != errcode.Canceled {
		t.Fatalf("awaitBrowser after the call ended = %v", err)
	}
}

// backOnFirstLook is down at the first look, and the relaunch ends (header
// update included) before that look returns: the waiter has not yet
// subscribed to the engine's changes when the signal fires.
type backOnFirstLook struct {
	Browser
	eng    *consent.Engine
	looked bool
}

func (b *backOnFirstLook) Available() error {
	if b.looked {
		return nil
	}
	b.looked = true
	b.eng.SetInfo(consent.Info{Browser: "Chromium back"})
	return errcode.Errorf(errcode.BrowserUnavailable, errcode.NextListTabs, "relaunching")
}

func TestWebUseSeesARestartThatEndedBeforeItsWait(t *testing.T) {
	eng := consent.New(consent.Config{})
	defer eng.Close()
	d := &Dispatcher{engine: eng, browser: &backOnFirstLook{eng: eng}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.awaitBrowser(ctx) }()
	// A lost wake-up would leave the waiter until browserRestartMax; the
	// browser is up, so the answer must not wait for any further signal.
	if err := <-done; err != nil {
		t.Fatalf("awaitBrowser = %v though Chromium was back before the wait began", err)
	}
}
