package browser

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeGrid is a loopback Selenium Grid 4 as far as the console uses one:
// no /json/version, a WebDriver /status, POST /session answering with an
// se:cdp URL (a fakeCDP), DELETE /session/ID.
type fakeGrid struct {
	srv *httptest.Server
	cdp *fakeCDP

	mu      sync.Mutex
	auth    []string // Authorization of every request
	created []map[string]any
	deleted []string
}

func newFakeGrid(t *testing.T) *fakeGrid {
	g := &fakeGrid{cdp: newFakeCDP(t)}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.auth = append(g.auth, r.Header.Get("Authorization"))
		g.mu.Unlock()
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/status":
			_, _ = io.WriteString(w, `{"value":{"ready":true,"message":"Selenium Grid ready."}}`)
		case r.Method == http.MethodPost && r.URL.Path == "/session":
			var body map[string]any
			_ = json.NewDecoder(r.Body).Decode(&body)
			g.mu.Lock()
			g.created = append(g.created, body)
			id := "s" + string(rune('0'+len(g.created)))
			g.mu.Unlock()
			_ = json.NewEncoder(w).Encode(map[string]any{"value": map[string]any{
				"sessionId":    id,
				"capabilities": map[string]any{"browserName": "chrome", "se:cdp": g.cdp.URL()},
			}})
		case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/session/"):
			g.mu.Lock()
			g.deleted = append(g.deleted, strings.TrimPrefix(r.URL.Path, "/session/"))
			g.mu.Unlock()
			_, _ = io.WriteString(w, `{"value":null}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(g.srv.Close)
	return g
}

// Attaching to a Grid creates a WebDriver session with the launch flags,
// drives its se:cdp, and deletes the session on Close; a user:password
// token goes as HTTP Basic.
func TestAttachSeleniumGrid(t *testing.T) {
	g := newFakeGrid(t)
	gate := newFakeGate()
	b, err := Launch(testCtx(t), Options{BrowserURL: g.srv.URL, BrowserToken: "alice:" + testToken, Gate: gate})
	if err != nil {
		t.Fatal(err)
	}
	<-g.cdp.peers
	g.mu.Lock()
	if len(g.created) != 1 {
		t.Fatalf("%d sessions created", len(g.created))
	}
	caps, _ := json.Marshal(g.created[0])
	for _, f := range LaunchFlags() {
		if !strings.Contains(string(caps), f) {
			t.Errorf("the session's chromeOptions lack %s: %s", f, caps)
		}
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+testToken))
	if slices.ContainsFunc(g.auth, func(a string) bool { return a != want }) {
		t.Errorf("Authorization %q, want Basic on every request", g.auth)
	}
	g.mu.Unlock()
	if s := b.String(); strings.Contains(s, testToken) || !strings.Contains(s, g.srv.URL) {
		t.Errorf("header %q", s)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !slices.Equal(g.deleted, []string{"s1"}) {
		t.Fatalf("deleted %q, want the one session", g.deleted)
	}
}
