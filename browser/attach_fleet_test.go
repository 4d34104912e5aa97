package browser

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/internal/logtest"
)

const (
	testToken = "fleetTok3n-s3cret"
	testQuery = "qTok3n-in-the-url"
)

// noSecret fails when any text holds the token or the URL's query value.
func noSecret(t *testing.T, where string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(s, testToken) || strings.Contains(s, testQuery) {
			t.Errorf("%s shows a secret: %q", where, s)
		}
	}
}

// The token travels in the Authorization header of /json/version and of
// the upgrade; the URL's own query reaches both; neither is in the
// header line, the errors or the log.
func TestAttachTokenTravelsButIsNeverShown(t *testing.T) {
	f := newFakeCDP(t)
	f.onlyOnce()
	g := newFakeGate()
	logs := &logtest.Buffer{}
	raw := f.srv.URL + "/?token=" + testQuery
	ctx := testCtx(t)
	b, err := Launch(ctx, Options{BrowserURL: raw, BrowserToken: testToken, Gate: g,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p := <-f.peers
	f.mu.Lock()
	reqs := append([]*http.Request{}, f.requests...)
	f.mu.Unlock()
	if len(reqs) < 2 || reqs[0].URL.Path != "/json/version" {
		t.Fatalf("want /json/version then the upgrade, got %d requests", len(reqs))
	}
	for _, r := range reqs {
		if got := r.Header.Get("Authorization"); got != "Bearer "+testToken {
			t.Errorf("%s: Authorization %q, want the bearer token", r.URL.Path, got)
		}
		if r.URL.Query().Get("token") != testQuery {
			t.Errorf("%s: the URL's query did not travel: %q", r.URL.Path, r.URL.RawQuery)
		}
	}
	if got, want := b.String(), "attached, no network wall · "+f.srv.URL+"/"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	_ = p.raw([]byte("HTTP/1.1 408 Request Timeout\r\n\r\n"))
	<-b.Done()
	err = b.Available()
	wantCode(t, err, errcode.BrowserUnavailable)
	g.until(t, "the header to say the browser is gone", func(g *fakeGate) bool {
		return strings.Contains(g.statuses[len(g.statuses)-1], "gone")
	})
	// A re-attach try the fleet refuses logs its error: scrubbed too.
	waitFor(t, "a refused re-attach in the log", func() bool { return strings.Contains(logs.String(), "attach again") })
	g.mu.Lock()
	statuses := append([]string{}, g.statuses...)
	notes := append([]string{}, g.notes...)
	g.mu.Unlock()
	noSecret(t, "the header", statuses...)
	noSecret(t, "the activity log", notes...)
	noSecret(t, "an error", err.Error())
	noSecret(t, "the log", logs.String())
}

// Errors from the HTTP and websocket layers quote the URL; they reach the
// operator scrubbed, and a refusal says what it was.
func TestAttachRefusalsAreClearAndScrubbed(t *testing.T) {
	f := newFakeCDP(t)
	status := http.StatusTooManyRequests
	f.upgrade = func(w http.ResponseWriter, r *http.Request) bool {
		http.Error(w, "Too Many Requests", status)
		return false
	}
	ws := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/?token=" + testQuery
	for _, c := range []struct {
		status int
		raw    string
		want   string
	}{
		{http.StatusTooManyRequests, ws, "queue is full"},
		{http.StatusUnauthorized, ws, "refused the credential"},
		{http.StatusTooManyRequests, f.srv.URL + "?token=" + testQuery, "queue is full"},
	} {
		status = c.status
		_, err := Launch(testCtx(t), Options{BrowserURL: c.raw, BrowserToken: testToken, Gate: newFakeGate()})
		wantCode(t, err, errcode.BrowserUnavailable)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d via %s: %v, want it to say %q", c.status, ShownURL(c.raw), err, c.want)
		}
		noSecret(t, "a refusal", err.Error())
	}
	// Nothing listens: net/http's error quotes the full URL.
	dead := "http://127.0.0.1:1/?token=" + testQuery
	_, err := Launch(testCtx(t), Options{BrowserURL: dead, Gate: newFakeGate()})
	wantCode(t, err, errcode.BrowserUnavailable)
	noSecret(t, "a dial error", err.Error())
}

// A fleet queues by holding the upgrade: the console says so after a
// second, and attaches once the slot comes.
func TestAttachQueuedSaysWaitingForASlot(t *testing.T) {
	f := newFakeCDP(t)
	slot := make(chan struct{})
	f.upgrade = func(w http.ResponseWriter, r *http.Request) bool {
		<-slot
		return true
	}
	g := newFakeGate()
	waiting := make(chan string, 1)
	var b *Browser
	done := make(chan error, 1)
	go func() {
		var err error
		b, err = Launch(testCtx(t), Options{BrowserURL: f.URL() + "?token=" + testQuery, Gate: g,
			Waiting: func(s string) { waiting <- s }})
		done <- err
	}()
	var line string
	select {
	case line = <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the console never said it waits for a slot")
	}
	if want := StatusWaitingForSlot + ShownURL(f.URL()); line != want {
		t.Errorf("waiting line %q, want %q", line, want)
	}
	g.until(t, "the header to say it waits for a slot", func(g *fakeGate) bool {
		return len(g.statuses) > 0 && strings.HasPrefix(g.statuses[len(g.statuses)-1], StatusWaitingForSlot)
	})
	close(slot)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !strings.HasPrefix(b.String(), "attached, no network wall · ") {
		t.Errorf("after the slot came: %q", b.String())
	}
}

// A queue that never moves ends in a clear error at the handshake
// deadline, not at the launch deadline behind it.
func TestAttachHandshakeDeadline(t *testing.T) {
	f := newFakeCDP(t)
	release := make(chan struct{})
	defer close(release)
	f.upgrade = func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return false
	}
	start := time.Now()
	_, err := Launch(testCtx(t), Options{BrowserURL: f.URL(), Gate: newFakeGate(), HandshakeTimeout: 1500 * time.Millisecond})
	wantCode(t, err, errcode.BrowserUnavailable)
	if !strings.Contains(err.Error(), "no browser slot within 1.5s") {
		t.Errorf("got %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the handshake deadline did not bound the attach: %s", d)
	}
}

func TestShownURL(t *testing.T) {
	for in, want := range map[string]string{
		"ws://127.0.0.1:3000?token=abc":             "ws://127.0.0.1:3000",
		"wss://u:p@fleet.example/chromium?x=1#f":    "wss://fleet.example/chromium",
		"http://grid:4444/wd/hub":                   "http://grid:4444/wd/hub",
		"not a url?token=abc":                       "not a url",
		"http://h/?launch=" + url.QueryEscape("{}"): "http://h/",
	} {
		if got := ShownURL(in); got != want {
			t.Errorf("ShownURL(%q) = %q, want %q", in, got, want)
		}
	}
}
