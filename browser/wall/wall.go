// Package wall is the second wall of design.md §8: a forward proxy on
// loopback that every connection of the console's Chromium must use, which
// enforces managed policy on each one before it is opened, whoever opens it
// (a tab's renderer, a service worker, a document a service worker made
// up, the browser process's own fetchers: Background Fetch, payment method
// manifests, FedCM) and whatever it carries (HTTP, WebSocket, WebRTC relayed
// over TCP).
//
// The request hook of package browser sees a tab's requests through CDP;
// the wall sees connections. It knows nothing of tabs, conversations or
// consent: it answers to managed policy alone (docs/decisions.md, "Issue
// 20: the second wall").
//
// Chromium is made to use it by ChromiumFlags: --proxy-server pointing
// here, --proxy-bypass-list=<-loopback> so loopback and private addresses
// get no exemption either, WebRTC restricted to proxied connections (no
// UDP at all: ICE and STUN over UDP are off, TURN over TCP goes through
// CONNECT here) and QUIC off. A Chromium that loses the wall (the console
// died) can reach nothing: a fixed proxy has no direct fallback.
//
// Invariants:
//   - A request or tunnel is judged before any connection to its
//     destination is dialled; a refusal never opens one. A destination
//     that cannot be dialled is an honest failure: a failed CONNECT, or
//     for plain HTTP a 502 the browser can ask about (Unreached).
//   - Plain HTTP (absolute-URI requests) is judged like the hook judges a
//     request: origin, method, body, WebSocket upgrade (policy.Decide).
//     Refused: 403 with the design.md §8 text.
//   - CONNECT is judged by its host:port target, then again by its first
//     client bytes: a TLS handshake must match an allowed https origin,
//     anything else (a ws: WebSocket, a TURN relay) an allowed http origin,
//     and with blockBrowserUploads plain bytes are refused outright. TLS is
//     never decrypted, so the methods and bodies inside an https tunnel are
//     the hook's to judge (policy.DecideTunnel).
//   - The console's own loopback endpoints (Options.Own) pass unjudged; a
//     request aimed at the wall itself is refused, so it never loops.
//   - Close stops accepting, closes every connection and returns after
//     every goroutine the Wall started has ended.
package wall

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tabwarden/tabwarden/policy"
)

const (
	dialTimeout = 10 * time.Second
	// firstBytesWait bounds how long a granted tunnel waits for the
	// client's first byte (TLS and HTTP clients speak first).
	firstBytesWait = 30 * time.Second
)

// quiet takes net/http's own log lines (a client that went away mid-copy):
// the wall's lines go to Options.Logger.
var quiet = log.New(io.Discard, "", 0)

// Options configure Start.
type Options struct {
	// Policy is managed policy. Nil: unrestricted (the wall still keeps
	// WebRTC off UDP and every connection visible).
	Policy *policy.Policy
	// Own are host:port addresses of the console's own loopback servers
	// (the navigation hold) that Chromium reaches through the wall with no
	// judgment.
	Own []string
	// Logger gets one debug line per refusal (target and code, never a
	// path or query). Nil: discard.
	Logger *slog.Logger
}

// Wall is a running proxy. Safe for concurrent use.
type Wall struct {
	pol  *policy.Policy
	own  map[string]bool
	self string
	log  *slog.Logger

	ln     net.Listener
	srv    *http.Server
	pool   idlePool // kept-alive connections to destinations (relay.go)
	dialer net.Dialer

	ctx    context.Context // cancelled by Close: ends tunnels
	cancel context.CancelFunc
	wg     sync.WaitGroup

	refused atomic.Uint64
	passed  atomic.Uint64

	unreachedMu sync.Mutex
	unreached   []unreachedRequest // newest last, at most maxUnreached
}

// maxUnreached bounds the wall's memory of requests it could not dial.
const maxUnreached = 64

// unreachedRequest is a plain-HTTP request whose destination the wall could
// not dial: nothing of it left the machine.
type unreachedRequest struct {
	url      string // scheme://host/path?query, as the wall received it
	netError string // Chromium's name for the failure (net::ERR_…)
}

// bufferPool lends the relay its response copy buffers.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte  { return *b.p.Get().(*[]byte) }
func (b *bufferPool) Put(s []byte) { b.p.Put(&s) }

var copyBuffers = &bufferPool{p: sync.Pool{New: func() any { s := make([]byte, 32<<10); return &s }}}

// Start listens on 127.0.0.1 (a free port) and serves until Close.
func Start(opts Options) (*Wall, error) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	w := &Wall{
		pol:    opts.Policy,
		own:    map[string]bool{},
		self:   ln.Addr().String(),
		log:    opts.Logger,
		ln:     ln,
		dialer: net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second},
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	for _, a := range opts.Own {
		w.own[strings.ToLower(a)] = true
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.srv = &http.Server{
		Handler:           http.HandlerFunc(w.serve),
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return w.ctx },
		ErrorLog:          quiet,
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		_ = w.srv.Serve(ln)
	}()
	return w, nil
}

// Addr is the wall's "127.0.0.1:PORT".
func (w *Wall) Addr() string { return w.self }

// ChromiumFlags are the launch flags that make every connection of
// Chromium go through the wall (see the package doc).
func (w *Wall) ChromiumFlags() []string { return Flags(w.self) }

// Flags are ChromiumFlags for a proxy at addr.
func Flags(addr string) []string {
	return []string{
		"--proxy-server=http://" + addr,
		// Chromium bypasses the proxy for localhost and loopback IPs
		// unless told not to: a loopback origin is an origin like any
		// other (design.md §4: no exemption).
		"--proxy-bypass-list=<-loopback>",
		// WebRTC may use UDP only through a proxy that relays UDP; an
		// HTTP proxy relays none, so ICE, STUN and TURN/UDP are off and
		// TURN over TCP is a CONNECT the wall judges.
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
		"--webrtc-ip-handling-policy=disable_non_proxied_udp",
		// QUIC is UDP; through an HTTP proxy Chromium would not use it,
		// and off it stays if anything ever tried.
		"--disable-quic",
	}
}

// Refused is how many requests and tunnels the wall has refused.
func (w *Wall) Refused() uint64 { return w.refused.Load() }

// Passed is how many it has let through.
func (w *Wall) Passed() uint64 { return w.passed.Load() }

// Close stops the wall: no new connection is accepted, every open one
// (tunnels included) is closed. It returns once every goroutine the wall
// started has ended.
func (w *Wall) Close() error {
	w.cancel()
	err := w.srv.Close()
	w.pool.close()
	w.wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (w *Wall) serve(rw http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		w.tunnel(rw, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Scheme != "http" {
		// Not a proxy request: someone talking to the wall itself.
		w.refuse(rw, "", policy.Decision{Code: policy.CodeWebsiteBlocked, Message: policy.MsgWebsiteBlocked})
		return
	}
	target := strings.ToLower(r.URL.Host)
	if !w.own[target] {
		upgrade := strings.ToLower(r.Header.Get("Upgrade"))
		if target == w.self || hostIs(target, w.self) {
			w.refuse(rw, target, policy.Decision{Code: policy.CodeWebsiteBlocked, Message: policy.MsgWebsiteBlocked})
			return
		}
		hasBody := r.ContentLength != 0 || len(r.TransferEncoding) > 0
		u := r.URL.String()
		if d := w.pol.Decide(u, r.Method, hasBody, upgrade == "websocket"); !d.Allow {
			w.refuse(rw, target, d)
			return
		}
		if upgrade != "" && upgrade != "websocket" && w.pol != nil && w.pol.BlockUploads {
			// Any other upgraded connection is a channel upstream too.
			w.refuse(rw, target, policy.Decision{Code: policy.CodeUploadBlocked, Message: policy.MsgUploadBlocked})
			return
		}
	}
	w.passed.Add(1)
	w.forward(rw, r)
}

// hostIs reports whether hostport names the same port on a loopback
// spelling of self (localhost, 127.0.0.1, [::1]).
func hostIs(hostport, self string) bool {
	h, p, err := net.SplitHostPort(hostport)
	_, sp, _ := net.SplitHostPort(self)
	if err != nil || p != sp {
		return false
	}
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}

func (w *Wall) refuse(rw http.ResponseWriter, target string, d policy.Decision) {
	w.refused.Add(1)
	w.log.Debug("wall refused", "target", target, "code", d.Code)
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-store")
	rw.Header().Set("X-Tabwarden-Refused", d.Code)
	rw.WriteHeader(http.StatusForbidden)
	_, _ = io.WriteString(rw, d.Message+"\n")
}

// upstreamError answers 502 for a request the destination did not answer.
// unsent: nothing of the request can have left the machine, so a dial
// failure is remembered for Unreached.
func (w *Wall) upstreamError(rw http.ResponseWriter, r *http.Request, err error, unsent bool) {
	if errors.Is(err, context.Canceled) {
		return // the browser went away
	}
	w.log.Debug("wall upstream", "target", r.URL.Host, "err", err)
	if ne, ok := dialFailure(err); ok && unsent {
		w.remember(unreachedRequest{url: requestKey(r.URL.String()), netError: ne})
		rw.Header().Set("X-Tabwarden-Unreached", ne)
	}
	rw.WriteHeader(http.StatusBadGateway)
}

// dialFailure names, as Chromium would, an error that ended the request
// before a connection to its destination existed; ok is false for any
// other (the request may have been sent).
func dialFailure(err error) (netError string, ok bool) {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		return "", false
	}
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		return "net::ERR_NAME_NOT_RESOLVED", true
	case errors.Is(err, syscall.ECONNREFUSED):
		return "net::ERR_CONNECTION_REFUSED", true
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "net::ERR_ADDRESS_UNREACHABLE", true
	case op.Timeout():
		return "net::ERR_CONNECTION_TIMED_OUT", true
	}
	return "net::ERR_CONNECTION_FAILED", true
}

func (w *Wall) remember(u unreachedRequest) {
	w.unreachedMu.Lock()
	defer w.unreachedMu.Unlock()
	if len(w.unreached) == maxUnreached {
		w.unreached = append(w.unreached[:0], w.unreached[1:]...)
	}
	w.unreached = append(w.unreached, u)
}

// Unreached reports whether the wall answered the plain-HTTP request for
// rawURL with its 502 because it could not dial the destination, naming
// the failure as Chromium would (net::ERR_CONNECTION_REFUSED…). Chromium
// reports that answer as a response (ERR_HTTP_RESPONSE_CODE_FAILURE); the
// browser asks here so that a navigation that never left the machine is
// not reported as one that may have reached the site. The answer is
// consumed.
func (w *Wall) Unreached(rawURL string) (netError string, ok bool) {
	key := requestKey(rawURL)
	w.unreachedMu.Lock()
	defer w.unreachedMu.Unlock()
	for i := len(w.unreached) - 1; i >= 0; i-- {
		if w.unreached[i].url == key {
			ne := w.unreached[i].netError
			w.unreached = append(w.unreached[:i], w.unreached[i+1:]...)
			return ne, true
		}
	}
	return "", false
}

// requestKey is rawURL as a request line carries it: no fragment, an empty
// path as "/", scheme and host lower case.
func requestKey(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Fragment, u.RawFragment = "", ""
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String()
}

// tunnel serves a CONNECT: judged by target, then by the first bytes the
// client sends once told the tunnel is up; only then is the destination
// dialled.
func (w *Wall) tunnel(rw http.ResponseWriter, r *http.Request) {
	target := strings.ToLower(r.Host)
	if target == w.self || hostIs(target, w.self) {
		w.refuse(rw, target, policy.Decision{Code: policy.CodeWebsiteBlocked, Message: policy.MsgWebsiteBlocked})
		return
	}
	if d := w.pol.DecideTunnel(target, policy.TunnelUnknown); !d.Allow {
		w.refuse(rw, target, d)
		return
	}
	// When the first bytes cannot change the verdict (TLS and plain both
	// allowed), the destination is dialled before the tunnel is said to be
	// up, so a destination that cannot be reached is a failed CONNECT
	// (Chromium: ERR_TUNNEL_CONNECTION_FAILED, nothing sent) rather than
	// a tunnel that closes unanswered.
	var up net.Conn
	if w.pol.DecideTunnel(target, policy.TunnelTLS).Allow && w.pol.DecideTunnel(target, policy.TunnelPlain).Allow {
		var err error
		if up, err = w.dial(r.Context(), target); err != nil {
			rw.WriteHeader(http.StatusBadGateway)
			return
		}
	}
	hj, ok := rw.(http.Hijacker)
	if !ok {
		if up != nil {
			_ = up.Close()
		}
		rw.WriteHeader(http.StatusInternalServerError)
		return
	}
	client, brw, err := hj.Hijack()
	if err != nil {
		if up != nil {
			_ = up.Close()
		}
		return
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.splice(client, brw.Reader, target, up)
	}()
}

func (w *Wall) dial(ctx context.Context, target string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	up, err := w.dialer.DialContext(ctx, "tcp", target)
	if err != nil {
		w.log.Debug("wall upstream", "target", target, "err", err)
	}
	return up, err
}

// splice runs a granted tunnel; up is the destination when tunnel
// already dialled it, else nil (dialled once the first bytes are judged).
func (w *Wall) splice(client net.Conn, in *bufio.Reader, target string, up net.Conn) {
	defer client.Close()
	if up != nil {
		defer up.Close()
	}
	stop := context.AfterFunc(w.ctx, func() { _ = client.Close() })
	defer stop()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	_ = client.SetReadDeadline(time.Now().Add(firstBytesWait))
	first, err := in.Peek(1)
	if err != nil {
		return
	}
	_ = client.SetReadDeadline(time.Time{})
	kind := policy.TunnelPlain
	if first[0] == 0x16 { // TLS record type: handshake
		kind = policy.TunnelTLS
	}
	if d := w.pol.DecideTunnel(target, kind); !d.Allow {
		w.refused.Add(1)
		w.log.Debug("wall refused tunnel", "target", target, "code", d.Code)
		return
	}
	if up == nil {
		if up, err = w.dial(w.ctx, target); err != nil {
			return
		}
		defer up.Close()
	}
	stopUp := context.AfterFunc(w.ctx, func() { _ = up.Close() })
	defer stopUp()
	w.passed.Add(1)

	// The client's side: what it sent past the CONNECT head is in the
	// buffer first. Its end of input half-closes the destination, which
	// may still answer.
	done := make(chan struct{})
	go func() {
		defer close(done)
		if n := in.Buffered(); n > 0 {
			b, _ := in.Peek(n)
			if _, err := up.Write(b); err != nil {
				_ = client.Close()
				return
			}
			_, _ = in.Discard(n)
		}
		_, _ = io.Copy(up, client) // splice(2) between the TCP sockets
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	// The destination's end (or an error) ends the tunnel.
	_, _ = io.Copy(client, up)
	_ = client.Close()
	<-done
}
