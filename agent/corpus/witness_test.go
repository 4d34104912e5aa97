package corpus_test

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// hit is one request (or one WebSocket message) a corpus server saw.
type hit struct {
	Tag     string // the case-and-side tag in the path, "" if none
	Method  string
	Path    string
	BodyLen int  // bytes of request body actually read
	WSMsg   bool // a WebSocket data frame, not an HTTP request
	At      time.Time
}

// server is one fixture origin of the corpus on 127.0.0.1. Every request
// is recorded before it is answered, so a request the handler refuses is
// still one that reached the origin. Paths:
//
//	/c/<case>/<side>/<file>  a file of the case (page, script, redirect, ...)
//	/w/<tag>/...             a witness endpoint: answers something harmless
//	                         of the kind the extension names; /ws upgrades
//	                         to a WebSocket whose data frames are counted
//	/done/<tag>              the page says it has made its attempt
type server struct {
	URL   string
	files func(caseName, side, file string) (cfile, bool)

	srv  *http.Server
	done chan struct{}

	mu      sync.Mutex
	hits    []hit
	accepts int // TCP connections accepted
	changed chan struct{}
}

// cfile is one response of a case. Body has the placeholders of expand.
type cfile struct {
	Body   string
	Type   string            // Content-Type; "" guesses from the name
	Status int               // 0: 200
	Header map[string]string // extra headers, placeholders expanded
}

func startServer(files func(caseName, side, file string) (cfile, bool), expand func(caseName, side, s string) string) (*server, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &server{URL: "http://" + ln.Addr().String(), files: files, done: make(chan struct{}), changed: make(chan struct{})}
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, expand)
	}), ConnState: func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.mu.Lock()
			s.accepts++
			close(s.changed)
			s.changed = make(chan struct{})
			s.mu.Unlock()
		}
	}}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

func (s *server) close() {
	_ = s.srv.Close()
	<-s.done
}

func (s *server) record(h hit) {
	h.At = time.Now()
	s.mu.Lock()
	s.hits = append(s.hits, h)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// tagOf is the tag a path carries: /w/<tag>/…, /done/<tag>, or
// <case>-<side> for /c/<case>/<side>/….
func tagOf(path string) string {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	switch {
	case len(parts) >= 2 && (parts[0] == "w" || parts[0] == "done"):
		return parts[1]
	case len(parts) >= 3 && parts[0] == "c":
		return parts[1] + "-" + parts[2]
	}
	return ""
}

func (s *server) serve(w http.ResponseWriter, r *http.Request, expand func(caseName, side, s string) string) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	h := hit{Tag: tagOf(r.URL.Path), Method: r.Method, Path: r.URL.Path, BodyLen: len(body)}
	s.record(h)
	// A cached response would hide a request from the witness.
	w.Header().Set("Cache-Control", "no-store")
	// Witness endpoints answer anyone: a CORS refusal in the page must not
	// be what keeps a request from being made or retried.
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Allow-Methods", "GET, POST, PUT")
	w.Header().Set("Access-Control-Allow-Headers", "*")
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 4)
	switch {
	case parts[0] == "done":
		w.WriteHeader(http.StatusNoContent)
	case parts[0] == "w":
		if strings.HasSuffix(r.URL.Path, "/ws") && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			s.websocket(w, r, h.Tag)
			return
		}
		witnessAnswer(w, r.URL.Path)
	case parts[0] == "c" && len(parts) == 4:
		f, ok := s.files(parts[1], parts[2], parts[3])
		if !ok {
			http.NotFound(w, r)
			return
		}
		for k, v := range f.Header {
			w.Header().Set(k, expand(parts[1], parts[2], v))
		}
		typ := f.Type
		if typ == "" {
			typ = typeOf(parts[3])
		}
		w.Header().Set("Content-Type", typ)
		if f.Status != 0 {
			w.WriteHeader(f.Status)
		}
		fmt.Fprint(w, expand(parts[1], parts[2], f.Body))
	default:
		http.NotFound(w, r)
	}
}

func typeOf(name string) string {
	switch {
	case strings.HasSuffix(name, ".html"):
		return "text/html; charset=utf-8"
	case strings.HasSuffix(name, ".js"), strings.HasSuffix(name, ".mjs"):
		return "text/javascript"
	case strings.HasSuffix(name, ".css"):
		return "text/css"
	case strings.HasSuffix(name, ".json"):
		return "application/speculationrules+json"
	}
	return "text/plain"
}

// witnessAnswer gives each kind of request something it accepts, so a
// browser that got this far has nothing to retry.
func witnessAnswer(w http.ResponseWriter, path string) {
	switch {
	case strings.HasSuffix(path, ".html"), strings.HasSuffix(path, "/"):
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// Allows credentialed prerender of a cross-origin same-site page.
		w.Header().Set("Supports-Loading-Mode", "credentialed-prerender")
		fmt.Fprint(w, `<!doctype html><title>Witness</title><p>witness page</p>`)
	case strings.HasSuffix(path, ".js"), strings.HasSuffix(path, ".mjs"):
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `/* witness */`)
	case strings.HasSuffix(path, ".css"):
		w.Header().Set("Content-Type", "text/css")
		fmt.Fprint(w, `/* witness */`)
	case strings.HasSuffix(path, ".sse"):
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: witness\n\n")
	case strings.HasSuffix(path, ".vtt"):
		w.Header().Set("Content-Type", "text/vtt")
		fmt.Fprint(w, "WEBVTT\n\n00:00.000 --> 00:01.000\nwitness\n")
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// websocket completes an RFC 6455 handshake and records every data frame
// the client sends (the upload witness: a message that arrived).
func (s *server) websocket(w http.ResponseWriter, r *http.Request, tag string) {
	key := r.Header.Get("Sec-WebSocket-Key")
	hj, ok := w.(http.Hijacker)
	if key == "" || !ok {
		http.Error(w, "not a websocket", http.StatusBadRequest)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(sum[:]))
	if rw.Flush() != nil {
		return
	}
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	for {
		op, n, err := readFrame(rw.Reader)
		if err != nil || op == 0x8 {
			return
		}
		if op == 0x1 || op == 0x2 || op == 0x0 {
			s.record(hit{Tag: tag, Method: "WS", Path: r.URL.Path, BodyLen: n, WSMsg: true})
		}
	}
}

func readFrame(r *bufio.Reader) (op byte, n int, err error) {
	var hdr [2]byte
	if _, err = io.ReadFull(r, hdr[:]); err != nil {
		return 0, 0, err
	}
	op = hdr[0] & 0x0f
	size := uint64(hdr[1] & 0x7f)
	switch size {
	case 126:
		var b [2]byte
		if _, err = io.ReadFull(r, b[:]); err != nil {
			return 0, 0, err
		}
		size = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err = io.ReadFull(r, b[:]); err != nil {
			return 0, 0, err
		}
		size = binary.BigEndian.Uint64(b[:])
	}
	if hdr[1]&0x80 != 0 {
		var mask [4]byte
		if _, err = io.ReadFull(r, mask[:]); err != nil {
			return 0, 0, err
		}
	}
	if size > 1<<20 {
		return 0, 0, fmt.Errorf("frame too large")
	}
	if _, err = io.CopyN(io.Discard, r, int64(size)); err != nil {
		return 0, 0, err
	}
	return op, int(size), nil
}

// count is how many of the server's hits match.
func (s *server) count(match func(hit) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.hits {
		if match(h) {
			n++
		}
	}
	return n
}

// acceptCount is how many TCP connections the server has accepted, a
// request on them or not (a preconnect makes none).
func (s *server) acceptCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepts
}

func (s *server) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.hits)
}

func (s *server) list(match func(hit) bool) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, h := range s.hits {
		if match(h) {
			out = append(out, fmt.Sprintf("%s %s (%d bytes)", h.Method, h.Path, h.BodyLen))
		}
	}
	return out
}

// wait blocks until a hit matches or ctx ends; it reports whether one did.
func (s *server) wait(ctx context.Context, match func(hit) bool) bool {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if s.count(match) > 0 {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// first returns the earliest matching hit's time (zero when none).
func (s *server) first(match func(hit) bool) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.hits {
		if match(h) {
			return h.At
		}
	}
	return time.Time{}
}

// changes returns the channel closed at the next hit.
func (s *server) changes() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}
