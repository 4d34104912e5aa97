package browser

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// testHold is a navigation hold for a test that launches Chromium and
// opens a Browser in two steps; closing the Browser closes it too (Close
// is idempotent).
func testHold(t testing.TB) *holdServer {
	t.Helper()
	h, err := startHold()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.close)
	return h
}

// A held request whose connection drops before the verdict (Chromium then
// retries it on a new one) leaves its parking: the retry gets the verdict,
// not a 204 that would end the navigation while the review is open.
func TestHoldRetryAfterDroppedConnectionGetsTheVerdict(t *testing.T) {
	h := testHold(t)
	target := "http://127.0.0.1:1/page"
	to, release := h.park(target)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, to, nil)
		resp, err := noRedirect.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		first <- err
	}()
	waitFor(t, "the first request to be held", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.parked[strings.TrimPrefix(to, h.base)] != nil && h.parked[strings.TrimPrefix(to, h.base)].served
	})
	cancel() // the connection drops
	if err := <-first; err == nil {
		t.Fatal("the dropped request got an answer")
	}
	waitFor(t, "the parking to be free for a retry", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		p := h.parked[strings.TrimPrefix(to, h.base)]
		return p != nil && !p.served
	})
	retry := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, to, nil)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Error(err)
			retry <- nil
			return
		}
		resp.Body.Close()
		retry <- resp
	}()
	waitFor(t, "the retry to be held", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		p := h.parked[strings.TrimPrefix(to, h.base)]
		return p != nil && p.served
	})
	release(true)
	resp := <-retry
	if resp == nil || resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != target {
		t.Fatalf("the retry's answer: %+v, want 307 to %s", resp, target)
	}
	// A refusal still ends the parking for good: a later request gets 204.
	to2, release2 := h.park(target)
	release2(false)
	req2, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, to2, nil)
	resp2, err := noRedirect.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusNoContent {
		t.Fatalf("a refused parking answers %d, want 204", resp2.StatusCode)
	}
}
