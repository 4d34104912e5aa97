package browser

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// holdServer parks the navigation requests that wait for the operator
// outside Chromium (design.md §8: if the CDP connection is lost, held
// requests must not continue).
//
// A request paused in the Fetch domain is continued by Chromium itself the
// moment its DevTools client goes away, before any client can react; a
// review can take a minute. So a request that needs a review is not kept
// paused: the hook continues it, silently rewritten (the page cannot
// observe it), to this loopback server, which holds the HTTP request open
// until the review ends and then answers 307 to the original URL (method
// and body kept; the hook judges that request again and the grant now
// covers it) or 204, which aborts the navigation without an error page.
// When the connection is lost, nothing is paused in Chromium that it
// could let through, and every parked request gets 204.
type holdServer struct {
	ln   net.Listener
	srv  *http.Server
	base string // "http://127.0.0.1:PORT/hold/"
	done chan struct{}

	mu     sync.Mutex
	parked map[string]*parking
	// back are the requests released to go on: the 307's request for
	// that URL from that frame is not parked again.
	back   map[string]bool
	closed bool
}

type parking struct {
	to      string
	verdict chan bool // buffered: the first release wins
	served  bool      // its request has arrived (under holdServer.mu)
}

func startHold() (*holdServer, error) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &holdServer{
		ln:     ln,
		base:   "http://" + ln.Addr().String() + "/hold/",
		done:   make(chan struct{}),
		parked: map[string]*parking{},
		back:   map[string]bool{},
	}
	h.srv = &http.Server{Handler: http.HandlerFunc(h.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

// addr is the hold's "127.0.0.1:PORT".
func (h *holdServer) addr() string { return h.ln.Addr().String() }

// park registers a request for to and returns the URL to rewrite it to and
// the release that ends its wait: allow sends it on to to, anything else
// aborts it. Only the first release counts.
func (h *holdServer) park(to string) (string, func(allow bool)) {
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	token := hex.EncodeToString(raw[:])
	p := &parking{to: to, verdict: make(chan bool, 1)}
	h.mu.Lock()
	closed := h.closed
	if !closed {
		h.parked[token] = p
	}
	h.mu.Unlock()
	if closed {
		p.verdict <- false
	}
	release := func(allow bool) {
		if !allow {
			// A request that arrives later finds no parking: 204.
			h.mu.Lock()
			delete(h.parked, token)
			h.mu.Unlock()
		}
		select {
		case p.verdict <- allow:
		default:
		}
	}
	return h.base + token, release
}

// expectBack marks frame's next request for to as the one a release to
// go on sends back through the hook.
func (h *holdServer) expectBack(frame, to string) {
	h.mu.Lock()
	h.back[frame+" "+to] = true
	h.mu.Unlock()
}

// takeBack reports (once) whether frame's request for to was sent back by
// a release.
func (h *holdServer) takeBack(frame, to string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	ok := h.back[frame+" "+to]
	delete(h.back, frame+" "+to)
	return ok
}

// refuseAll aborts every parked request (the connection to Chromium is
// gone, or the Browser is closing).
func (h *holdServer) refuseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for token, p := range h.parked {
		select {
		case p.verdict <- false:
		default:
		}
		delete(h.parked, token)
	}
}

func (h *holdServer) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	token, ok := strings.CutPrefix(r.URL.Path, "/hold/")
	h.mu.Lock()
	p := h.parked[token]
	first := p != nil && !p.served
	if first {
		p.served = true // one request per parking
	}
	h.mu.Unlock()
	if !ok || !first {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	allow := false
	select {
	case allow = <-p.verdict:
	case <-r.Context().Done():
		// The connection went before the verdict. Chromium retries a
		// request whose reused connection dropped; the retry waits for
		// the same verdict rather than finding no parking (a 204, which
		// would end the navigation while its review is still open).
		// A refusal or close ends the parking; an approval leaves its
		// verdict for the retry (close clears it if none comes).
		h.mu.Lock()
		p.served = false
		h.mu.Unlock()
		return
	case <-h.done:
	}
	h.mu.Lock()
	delete(h.parked, token)
	h.mu.Unlock()
	if !allow {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Location", p.to)
	w.WriteHeader(http.StatusTemporaryRedirect)
}

// close aborts every parked request and stops the server.
func (h *holdServer) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.mu.Unlock()
	h.refuseAll()
	close(h.done)
	_ = h.srv.Close()
}
