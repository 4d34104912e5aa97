package wall

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// site is a destination http.Server that counts the TCP connections it
// accepts and the requests it serves.
type site struct {
	addr     string
	conns    atomic.Int64
	requests atomic.Int64
	mu       sync.Mutex
	headers  []http.Header
}

func newSite(t *testing.T, h http.HandlerFunc) *site {
	t.Helper()
	s := &site{}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	srv := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			s.requests.Add(1)
			s.mu.Lock()
			s.headers = append(s.headers, r.Header.Clone())
			s.mu.Unlock()
			h(rw, r)
		}),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.conns.Add(1)
			}
		},
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// proxied is an HTTP client that goes through w, keeping one connection
// to it open between requests, as Chromium does.
func proxied(t *testing.T, w *Wall) *http.Client {
	t.Helper()
	p, _ := url.Parse("http://" + w.Addr())
	tr := &http.Transport{Proxy: http.ProxyURL(p), MaxConnsPerHost: 1, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// answer is what get read of a response, its body closed.
type answer struct {
	StatusCode    int
	ContentLength int64
	Trailer       http.Header
}

func get(t *testing.T, c *http.Client, method, u, body string) (answer, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s body: %v", method, u, err)
	}
	return answer{res.StatusCode, res.ContentLength, res.Trailer}, string(b)
}

// TestRelayKeepsConnections: requests through the wall reuse one
// connection to their destination; bodies of every framing (length,
// chunked, none for HEAD, a request body when uploads are allowed) arrive
// whole, and no header of the browser's hop (Proxy-Connection, one the
// Connection header names) reaches the site.
func TestRelayKeepsConnections(t *testing.T) {
	s := newSite(t, func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked":
			rw.Header().Set("Trailer", "X-Sum")
			_, _ = io.WriteString(rw, "one,")
			rw.(http.Flusher).Flush()
			_, _ = io.WriteString(rw, "two")
			rw.Header().Set("X-Sum", "2")
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			_, _ = fmt.Fprintf(rw, "%s %s", r.Method, b)
		default:
			rw.Header().Set("Content-Length", "5")
			_, _ = io.WriteString(rw, "hello")
		}
	})
	w := startWall(t, Options{Policy: mustPolicy(t, []string{"http://" + s.addr}, false)})
	c := proxied(t, w)
	base := "http://" + s.addr

	if res, body := get(t, c, http.MethodGet, base+"/a", ""); res.StatusCode != 200 || body != "hello" {
		t.Fatalf("GET: %d %q", res.StatusCode, body)
	}
	chunked, body := get(t, c, http.MethodGet, base+"/chunked", "")
	if chunked.StatusCode != 200 || body != "one,two" || chunked.Trailer.Get("X-Sum") != "2" {
		t.Fatalf("chunked GET: %d %q trailer %v", chunked.StatusCode, body, chunked.Trailer)
	}
	if res, body := get(t, c, http.MethodHead, base+"/a", ""); res.StatusCode != 200 || body != "" || res.ContentLength != 5 {
		t.Fatalf("HEAD: %d %q length %d", res.StatusCode, body, res.ContentLength)
	}
	if res, body := get(t, c, http.MethodPost, base+"/echo", "a body"); res.StatusCode != 200 || body != "POST a body" {
		t.Fatalf("POST: %d %q", res.StatusCode, body)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/a", nil)
	req.Header.Set("Proxy-Connection", "keep-alive")
	req.Header.Set("Connection", "X-Hop")
	req.Header.Set("X-Hop", "mine")
	req.Header.Set("X-End", "theirs")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()

	if n := s.requests.Load(); n != 5 {
		t.Errorf("the site served %d requests, want 5", n)
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("the site accepted %d connections for 5 sequential requests, want 1 kept alive", n)
	}
	s.mu.Lock()
	last := s.headers[len(s.headers)-1]
	s.mu.Unlock()
	for _, k := range []string{"Proxy-Connection", "X-Hop", "Connection"} {
		if v := last.Get(k); v != "" {
			t.Errorf("the site got the browser's hop header %s: %q", k, v)
		}
	}
	if last.Get("X-End") != "theirs" {
		t.Errorf("an end-to-end header was lost: %v", last)
	}
}

// TestRelayStreams: a body of unknown length reaches the browser piece by
// piece: the site sends its second piece only once the browser has read
// the first.
func TestRelayStreams(t *testing.T) {
	seen := make(chan struct{})
	s := newSite(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(rw, "data: one\n\n")
		rw.(http.Flusher).Flush()
		select {
		case <-seen:
		case <-time.After(5 * time.Second):
			_, _ = io.WriteString(rw, "data: timeout\n\n")
			return
		}
		_, _ = io.WriteString(rw, "data: two\n\n")
	})
	w := startWall(t, Options{Policy: mustPolicy(t, []string{"http://" + s.addr}, true)})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+s.addr+"/events", nil)
	res, err := proxied(t, w).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: one\n" {
		t.Fatalf("first event: %q %v", line, err)
	}
	close(seen)
	rest, _ := io.ReadAll(br)
	if string(rest) != "\ndata: two\n\n" {
		t.Fatalf("the rest of the stream: %q", rest)
	}
}

// TestRelayWebSocket: an allowed ws: upgrade becomes a two-way byte
// stream between the browser and the site.
func TestRelayWebSocket(t *testing.T) {
	s := newSite(t, func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(rw, "no upgrade", http.StatusBadRequest)
			return
		}
		c, brw, err := http.NewResponseController(rw).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		_ = brw.Flush()
		line, _ := brw.ReadString('\n')
		_, _ = brw.WriteString("echo " + line)
		_ = brw.Flush()
	})
	w := startWall(t, Options{Policy: mustPolicy(t, []string{"http://" + s.addr}, false)})
	c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", w.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, "GET http://"+s.addr+"/ws HTTP/1.1\r\nHost: "+s.addr+"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("upgrade answer: %v", err)
	}
	_ = res.Body.Close() // a 101 has no body: the connection is the stream
	if res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answer: %s", res.Status)
	}
	_, _ = io.WriteString(c, "ping\n")
	if line, err := br.ReadString('\n'); err != nil || line != "echo ping\n" {
		t.Fatalf("through the upgraded connection: %q %v", line, err)
	}
}

// TestRelayClosedKeptConnection: a kept-alive connection the site closed
// while idle is no failure for the next GET, which goes on a fresh one.
func TestRelayClosedKeptConnection(t *testing.T) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepts atomic.Int64
	closed := make(chan struct{}, 3)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepts.Add(1)
			go func() {
				// After one answer that promised to stay open.
				defer func() { _ = c.Close(); closed <- struct{}{} }()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}()
		}
	}()
	addr := ln.Addr().String()
	w := startWall(t, Options{Policy: mustPolicy(t, []string{"http://" + addr}, true)})
	c := proxied(t, w)
	for i := range 3 {
		if res, body := get(t, c, http.MethodGet, fmt.Sprintf("http://%s/%d", addr, i), ""); res.StatusCode != 200 || body != "ok" {
			t.Fatalf("GET %d: %d %q", i, res.StatusCode, body)
		}
		<-closed // the wall's kept connection is now closed at the far end
	}
	if n := accepts.Load(); n != 3 {
		t.Errorf("the site accepted %d connections, want one per request", n)
	}
	if _, ok := w.Unreached(fmt.Sprintf("http://%s/1", addr)); ok {
		t.Error("a request answered on a fresh connection was remembered as unreached")
	}
}
