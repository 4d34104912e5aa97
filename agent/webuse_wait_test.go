package agent

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/tabwarden/tabwarden/consent"
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
	return consent.Errorf(consent.CodeBrowserUnavailable, consent.NextListTabs, "relaunching")
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
	if err := <-done; consent.CodeOf(err) != consent.CodeCanceled {
		t.Fatalf("awaitBrowser after the call ended = %v", err)
	}
}
