package wall

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/policy"
)

// dest is a destination the wall may or may not reach: it counts TCP
// accepts (a refused request must open none) and echoes what it reads
// back as an HTTP response to GETs, or raw for tunnels.
type dest struct {
	ln      net.Listener
	accepts atomic.Int64
	mu      sync.Mutex
	got     []byte
	wg      sync.WaitGroup
}

func newDest(t testing.TB) *dest {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &dest{ln: ln}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d.accepts.Add(1)
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				br := bufio.NewReader(c)
				first, err := br.Peek(1)
				if err != nil {
					return
				}
				if first[0] >= 'A' && first[0] <= 'Z' {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					body, _ := io.ReadAll(req.Body)
					d.record([]byte(req.Method + " " + req.URL.RequestURI() + " " + string(body)))
					_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
					return
				}
				buf := make([]byte, 64)
				n, _ := br.Read(buf)
				d.record(buf[:n])
				_, _ = c.Write(buf[:n])
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); d.wg.Wait() })
	return d
}

func (d *dest) record(b []byte) {
	d.mu.Lock()
	d.got = append(d.got, b...)
	d.mu.Unlock()
}

func (d *dest) addr() string { return d.ln.Addr().String() }

func mustPolicy(t testing.TB, origins []string, uploads bool) *policy.Policy {
	t.Helper()
	exec := map[string]any{"blockBrowserUploads": uploads}
	if origins != nil {
		exec["browserOrigins"] = origins
	}
	raw, _ := json.Marshal(map[string]any{"execution": exec})
	p, err := policy.Parse("test.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func startWall(t *testing.T, opts Options) *Wall {
	t.Helper()
	w, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return w
}

// send writes raw to the wall and returns everything it answers until it
// closes or goes quiet.
func send(t *testing.T, w *Wall, raw string, then []byte) string {
	t.Helper()
	c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", w.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var out strings.Builder
	if then == nil {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			return "no response: " + err.Error()
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		head := "HTTP/1.1 " + res.Status + "\r\n"
		for k, v := range res.Header {
			head += k + ": " + strings.Join(v, ",") + "\r\n"
		}
		return head + "\r\n" + string(body)
	}
	{
		// A tunnel: read the CONNECT answer's head, then send then.
		for {
			line, err := br.ReadString('\n')
			out.WriteString(line)
			if err != nil || line == "\r\n" {
				break
			}
		}
		if strings.HasPrefix(out.String(), "HTTP/1.1 200") {
			_, _ = c.Write(then)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	rest, _ := io.ReadAll(br)
	out.Write(rest)
	return out.String()
}

func TestPlainRequests(t *testing.T) {
	a, b := newDest(t), newDest(t)
	pol := mustPolicy(t, []string{"http://" + a.addr()}, true)
	w := startWall(t, Options{Policy: pol})

	got := send(t, w, "GET http://"+a.addr()+"/x?q=1 HTTP/1.1\r\nHost: "+a.addr()+"\r\nConnection: close\r\n\r\n", nil)
	if !strings.HasPrefix(got, "HTTP/1.1 200") || a.accepts.Load() != 1 {
		t.Fatalf("allowed GET: %q, %d accepts", got, a.accepts.Load())
	}

	for _, c := range []struct{ name, raw, code string }{
		{"other origin", "GET http://" + b.addr() + "/ HTTP/1.1\r\nHost: " + b.addr() + "\r\n\r\n", policy.CodeWebsiteBlocked},
		{"POST with a body", "POST http://" + a.addr() + "/w HTTP/1.1\r\nHost: " + a.addr() + "\r\nContent-Length: 11\r\n\r\nhello world", policy.CodeUploadBlocked},
		{"PUT without a body", "PUT http://" + a.addr() + "/w HTTP/1.1\r\nHost: " + a.addr() + "\r\nContent-Length: 0\r\n\r\n", policy.CodeUploadBlocked},
		{"chunked GET", "GET http://" + a.addr() + "/w HTTP/1.1\r\nHost: " + a.addr() + "\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", policy.CodeUploadBlocked},
		{"WebSocket upgrade", "GET http://" + a.addr() + "/ws HTTP/1.1\r\nHost: " + a.addr() + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", policy.CodeUploadBlocked},
		{"other upgrade", "GET http://" + a.addr() + "/ HTTP/1.1\r\nHost: " + a.addr() + "\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n", policy.CodeUploadBlocked},
		{"origin-form to the wall", "GET / HTTP/1.1\r\nHost: " + a.addr() + "\r\n\r\n", policy.CodeWebsiteBlocked},
		{"https absolute", "GET https://" + a.addr() + "/ HTTP/1.1\r\nHost: " + a.addr() + "\r\n\r\n", policy.CodeWebsiteBlocked},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := send(t, w, c.raw, nil)
			if !strings.HasPrefix(got, "HTTP/1.1 403") || !strings.Contains(got, "X-Tabwarden-Refused: "+c.code) {
				t.Errorf("answer %q, want 403 %s", got, c.code)
			}
		})
	}
	if n := a.accepts.Load(); n != 1 {
		t.Errorf("A accepted %d connections, want only the allowed GET's", n)
	}
	if n := b.accepts.Load(); n != 0 {
		t.Errorf("B accepted %d connections, want 0", n)
	}
}

func TestOwnAndSelf(t *testing.T) {
	own := newDest(t)
	w := startWall(t, Options{Policy: mustPolicy(t, []string{}, true), Own: []string{own.addr()}})
	got := send(t, w, "GET http://"+own.addr()+"/hold/x HTTP/1.1\r\nHost: "+own.addr()+"\r\nConnection: close\r\n\r\n", nil)
	if !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Errorf("own endpoint under a policy allowing nothing: %q", got)
	}
	_, port, _ := net.SplitHostPort(w.Addr())
	for _, self := range []string{w.Addr(), "localhost:" + port, "[::1]:" + port} {
		got := send(t, w, "GET http://"+self+"/ HTTP/1.1\r\nHost: "+self+"\r\n\r\n", nil)
		if !strings.HasPrefix(got, "HTTP/1.1 403") {
			t.Errorf("request to the wall itself (%s): %q", self, got)
		}
		got = send(t, w, "CONNECT "+self+" HTTP/1.1\r\nHost: "+self+"\r\n\r\n", []byte{0x16})
		if !strings.HasPrefix(got, "HTTP/1.1 403") {
			t.Errorf("tunnel to the wall itself (%s): %q", self, got)
		}
	}
	// Unrestricted, the wall still refuses itself.
	open := startWall(t, Options{})
	got = send(t, open, "GET http://"+open.Addr()+"/ HTTP/1.1\r\nHost: "+open.Addr()+"\r\n\r\n", nil)
	if !strings.HasPrefix(got, "HTTP/1.1 403") {
		t.Errorf("unrestricted wall, request to itself: %q", got)
	}
}

func TestTunnels(t *testing.T) {
	a, b := newDest(t), newDest(t)
	tls := []byte{0x16, 0x03, 0x01, 0x00, 0x05, 'h', 'e', 'l', 'l', 'o'}
	stun := []byte{0x00, 0x01, 0x00, 0x08, 0x21, 0x12, 0xa4, 0x42}
	connect := func(to string) string { return "CONNECT " + to + " HTTP/1.1\r\nHost: " + to + "\r\n\r\n" }

	cases := []struct {
		name     string
		origins  []string
		uploads  bool
		to       *dest
		first    []byte
		wantHead string // 200 or 403
		reached  bool
	}{
		{"https origin, TLS", []string{"https://" + "%A"}, false, a, tls, "200", true},
		{"https origin, plain bytes", []string{"https://" + "%A"}, false, a, stun, "200", false},
		{"http origin, plain (ws:, TURN)", []string{"http://" + "%A"}, false, a, stun, "200", true},
		{"http origin, TLS", []string{"http://" + "%A"}, false, a, tls, "200", false},
		{"other origin", []string{"https://" + "%A"}, false, b, tls, "403", false},
		{"uploads blocked, http-only target", []string{"http://" + "%A"}, true, a, stun, "403", false},
		{"uploads blocked, https target, plain", []string{"https://" + "%A"}, true, a, stun, "200", false},
		{"uploads blocked, https target, TLS", []string{"https://" + "%A"}, true, a, tls, "200", true},
		{"unrestricted, uploads blocked, plain", nil, true, b, stun, "200", false},
		{"unrestricted, plain", nil, false, b, stun, "200", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var origins []string
			for _, o := range c.origins {
				origins = append(origins, strings.ReplaceAll(o, "%A", a.addr()))
			}
			w := startWall(t, Options{Policy: mustPolicy(t, origins, c.uploads)})
			before := c.to.accepts.Load()
			got := send(t, w, connect(c.to.addr()), c.first)
			if !strings.HasPrefix(got, "HTTP/1.1 "+c.wantHead) {
				t.Fatalf("answer %q, want %s", got, c.wantHead)
			}
			reached := c.to.accepts.Load() != before
			if reached != c.reached {
				t.Errorf("destination reached = %v, want %v (answer %q)", reached, c.reached, got)
			}
			if c.reached && !strings.HasSuffix(got, string(c.first)) {
				t.Errorf("tunnel did not carry the bytes both ways: %q", got)
			}
		})
	}
}

// TestCloseEndsTunnels: a tunnel open at Close is cut and Close returns.
func TestCloseEndsTunnels(t *testing.T) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			held <- c
		}
	}()
	w, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", w.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "CONNECT "+ln.Addr().String()+" HTTP/1.1\r\nHost: x\r\n\r\n\x16")
	var up net.Conn
	select {
	case up = <-held:
		defer up.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("tunnel never dialled")
	}
	// The tunnel is up once the client's first byte went through.
	_ = up.SetReadDeadline(time.Now().Add(5 * time.Second))
	first := make([]byte, 1)
	if _, err := io.ReadFull(up, first); err != nil || first[0] != 0x16 {
		t.Fatalf("the destination got %q, %v; want the client's first byte", first, err)
	}
	closed := make(chan error, 1)
	go func() { closed <- w.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on an open tunnel")
	}
	_ = up.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.ReadAll(up); err != nil {
		t.Errorf("the destination side of the tunnel is still open: %v", err)
	}
}

func TestFlags(t *testing.T) {
	f := strings.Join(Flags("127.0.0.1:1"), " ")
	for _, want := range []string{"--proxy-server=http://127.0.0.1:1", "--proxy-bypass-list=<-loopback>", "disable_non_proxied_udp", "--disable-quic"} {
		if !strings.Contains(f, want) {
			t.Errorf("flags %q lack %q", f, want)
		}
	}
}

// TestUnreachable: a destination nothing listens on is an honest failure
// the browser can tell from a site's own error: a plain request gets the
// wall's 502, remembered once under its URL with Chromium's name for the
// failure; a CONNECT whose first bytes cannot change the verdict fails
// before any tunnel is said to be up.
func TestUnreachable(t *testing.T) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	w := startWall(t, Options{})

	got := send(t, w, "GET http://"+dead+"/x?q=1 HTTP/1.1\r\nHost: "+dead+"\r\n\r\n", nil)
	if !strings.HasPrefix(got, "HTTP/1.1 502") || !strings.Contains(got, "X-Tabwarden-Unreached: net::ERR_CONNECTION_REFUSED") {
		t.Fatalf("plain request to a dead port: %q", got)
	}
	if _, ok := w.Unreached("http://" + dead + "/other"); ok {
		t.Error("Unreached answered for a URL the wall never failed")
	}
	if ne, ok := w.Unreached("http://" + strings.ToUpper(dead) + "/x?q=1#frag"); !ok || ne != "net::ERR_CONNECTION_REFUSED" {
		t.Errorf("Unreached = %q, %v; want net::ERR_CONNECTION_REFUSED", ne, ok)
	}
	if _, ok := w.Unreached("http://" + dead + "/x?q=1"); ok {
		t.Error("Unreached answered twice for one failure")
	}

	got = send(t, w, "CONNECT "+dead+" HTTP/1.1\r\nHost: "+dead+"\r\n\r\n", []byte{0x16})
	if !strings.HasPrefix(got, "HTTP/1.1 502") {
		t.Fatalf("CONNECT to a dead port: %q, want a 502 before any tunnel", got)
	}

	// A site's own 502 is the site's: nothing is remembered.
	site := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.WriteHeader(http.StatusBadGateway)
	})}
	sl, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = site.Serve(sl) }()
	t.Cleanup(func() { _ = site.Close() })
	got = send(t, w, "GET http://"+sl.Addr().String()+"/ HTTP/1.1\r\nHost: "+sl.Addr().String()+"\r\n\r\n", nil)
	if !strings.HasPrefix(got, "HTTP/1.1 502") || strings.Contains(got, "Unreached") {
		t.Fatalf("a site's 502: %q", got)
	}
	if _, ok := w.Unreached("http://" + sl.Addr().String() + "/"); ok {
		t.Error("a site's own 502 was taken for an unreachable destination")
	}
}
