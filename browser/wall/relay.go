package wall

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
	"time"
)

// The relay forwards a judged plain-HTTP request (absolute URI) on a
// kept-alive connection to its destination and copies the answer back, in
// the handler's own goroutine: one write and one read per request, where
// httputil.ReverseProxy over http.Transport cloned the request and its
// header and handed each request through the transport's write and read
// loops (three goroutines and their channel hops per request; issue 24
// item 6, docs/decisions.md).

const (
	// maxIdlePerHost bounds the kept-alive connections to one destination:
	// Chromium keeps up to 6 connections per origin open to us, and a
	// dial spared is most of a small request's cost.
	maxIdlePerHost = 32
	maxIdle        = 256
	idleTimeout    = 90 * time.Second
)

// upstream is one connection to a destination, with its buffers.
type upstream struct {
	conn      net.Conn
	br        *bufio.Reader
	bw        *bufio.Writer
	addr      string
	idleSince time.Time
}

// idlePool keeps the connections a response left reusable, per
// destination address, newest last.
type idlePool struct {
	mu     sync.Mutex
	idle   map[string][]*upstream
	n      int
	closed bool
}

// get takes the newest idle connection to addr that has not idled out.
func (p *idlePool) get(addr string) *upstream {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.idle[addr]
	for len(list) > 0 {
		u := list[len(list)-1]
		list[len(list)-1] = nil
		list = list[:len(list)-1]
		p.n--
		if time.Since(u.idleSince) < idleTimeout {
			p.idle[addr] = list
			return u
		}
		_ = u.conn.Close()
	}
	delete(p.idle, addr)
	return nil
}

// put keeps u for the next request to its destination, or closes it when
// the pool is full or closed.
func (p *idlePool) put(u *upstream) {
	u.idleSince = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.n >= maxIdle || len(p.idle[u.addr]) >= maxIdlePerHost {
		_ = u.conn.Close()
		return
	}
	if p.idle == nil {
		p.idle = map[string][]*upstream{}
	}
	p.idle[u.addr] = append(p.idle[u.addr], u)
	p.n++
}

// close closes every idle connection; put closes any later one.
func (p *idlePool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, list := range p.idle {
		for _, u := range list {
			_ = u.conn.Close()
		}
	}
	p.idle, p.n = nil, 0
}

var (
	upstreamReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
	upstreamWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
)

// release closes u and returns its buffers.
func (u *upstream) release() {
	_ = u.conn.Close()
	u.br.Reset(nil)
	u.bw.Reset(nil)
	upstreamReaders.Put(u.br)
	upstreamWriters.Put(u.bw)
}

// connect returns a kept-alive connection to addr, or dials one; reused
// says which. Only a judged request gets here.
func (w *Wall) connect(ctx context.Context, addr string) (u *upstream, reused bool, err error) {
	if u := w.pool.get(addr); u != nil {
		return u, true, nil
	}
	c, err := w.dial(ctx, addr)
	if err != nil {
		return nil, false, err
	}
	br := upstreamReaders.Get().(*bufio.Reader)
	br.Reset(c)
	bw := upstreamWriters.Get().(*bufio.Writer)
	bw.Reset(c)
	return &upstream{conn: c, br: br, bw: bw, addr: addr}, false, nil
}

// hopHeaders are the headers of one hop that are never relayed (RFC 9110
// §7.6.1), besides those the Connection header names.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// dropHopHeaders removes h's hop-by-hop headers, keeping Upgrade (and a
// Connection: Upgrade) when upgrade is the protocol being switched to.
func dropHopHeaders(h http.Header, upgrade string) {
	for _, v := range h["Connection"] {
		for f := range strings.SplitSeq(v, ",") {
			if f = textproto.TrimString(f); f != "" {
				delete(h, textproto.CanonicalMIMEHeaderKey(f))
			}
		}
	}
	for _, k := range hopHeaders {
		delete(h, k)
	}
	if upgrade != "" {
		h["Connection"] = []string{"Upgrade"}
		h["Upgrade"] = []string{upgrade}
	}
}

// idempotent methods may be sent again on a fresh connection when a
// kept-alive one turns out closed before answering (as http.Transport
// does).
func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// aLongTimeAgo, as a deadline, makes a blocked read or write return.
var aLongTimeAgo = time.Unix(1, 0)

// upgradeOf is the protocol r asks to switch to: its Upgrade header when
// its Connection header names it, else "".
func upgradeOf(h http.Header) string {
	for _, v := range h["Connection"] {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(textproto.TrimString(f), "upgrade") {
				return h.Get("Upgrade")
			}
		}
	}
	return ""
}

// forward relays a judged plain-HTTP request to its destination and its
// answer back. A 101 answer to an upgrade r asked for turns the
// connection into a two-way copy.
func (w *Wall) forward(rw http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	upgrade := upgradeOf(r.Header)
	addr := strings.ToLower(r.URL.Host)
	if r.URL.Port() == "" {
		addr = net.JoinHostPort(strings.ToLower(r.URL.Hostname()), "80")
	}
	// r is the server's to discard once the handler returns: it becomes the
	// request sent upstream in place. The Host header follows the judged
	// URL; the connection to the browser says nothing about the one to the
	// destination.
	dropHopHeaders(r.Header, upgrade)
	if _, ok := r.Header["User-Agent"]; !ok {
		r.Header["User-Agent"] = []string{""} // send none rather than Go's
	}
	r.Host, r.Close = "", false
	noBody := r.Body == nil || r.Body == http.NoBody
	for attempt := 0; ; attempt++ {
		u, reused, err := w.connect(ctx, addr)
		if err != nil {
			// Only a first dial that failed left nothing sent: a retry
			// follows a request written on a connection found closed.
			w.upstreamError(rw, r, err, attempt == 0)
			return
		}
		// A browser that goes away (or Close) ends a blocked exchange.
		stop := context.AfterFunc(ctx, func() { _ = u.conn.SetDeadline(aLongTimeAgo) })
		res, err := exchange(u, r)
		if err != nil {
			stop()
			u.release()
			if ctx.Err() != nil {
				return // the browser went away
			}
			// A kept-alive connection the destination had closed answers
			// nothing: an idempotent request without a body goes again on
			// a fresh one, as http.Transport does.
			if reused && attempt == 0 && noBody && idempotent(r.Method) &&
				(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err)) {
				continue
			}
			w.upstreamError(rw, r, err, false)
			return
		}
		if res.StatusCode == http.StatusSwitchingProtocols {
			if !stop() {
				u.release()
				return
			}
			w.switchProtocols(rw, u, res, upgrade)
			return
		}
		reusable, cut := w.answer(rw, u, res)
		if !stop() {
			reusable = false // the deadline was poked
		}
		if reusable {
			w.pool.put(u)
		} else {
			u.release()
		}
		if cut && ctx.Err() == nil {
			// The destination's answer broke off: so does the browser's,
			// rather than ending as if complete.
			panic(http.ErrAbortHandler)
		}
		return
	}
}

// isReset reports a connection the destination reset.
func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && (op.Op == "read" || op.Op == "write") && !op.Timeout()
}

// maxInterim bounds the 1xx answers read before the final one.
const maxInterim = 5

// exchange writes r on u and reads the head of its final answer (1xx
// interim answers other than 101 are dropped: Chromium needs none of them
// through a proxy).
func exchange(u *upstream, r *http.Request) (*http.Response, error) {
	if err := r.Write(u.bw); err != nil {
		return nil, err
	}
	if err := u.bw.Flush(); err != nil {
		return nil, err
	}
	for range maxInterim {
		res, err := http.ReadResponse(u.br, r)
		if err != nil {
			return nil, err
		}
		if res.StatusCode >= 100 && res.StatusCode < 200 && res.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		return res, nil
	}
	return nil, errors.New("too many interim answers")
}

// answer copies res to the browser. reusable: u is left at the start of
// its next response (every byte of this one read, no close asked). cut:
// reading the destination's body failed.
func (w *Wall) answer(rw http.ResponseWriter, u *upstream, res *http.Response) (reusable, cut bool) {
	defer res.Body.Close()
	h := rw.Header()
	for k, v := range res.Header {
		h[k] = v
	}
	dropHopHeaders(h, "")
	if len(res.Trailer) > 0 {
		names := make([]string, 0, len(res.Trailer))
		for k := range res.Trailer {
			names = append(names, k)
		}
		h["Trailer"] = []string{strings.Join(names, ", ")}
	}
	rw.WriteHeader(res.StatusCode)
	if res.Body == http.NoBody {
		return !res.Close && u.br.Buffered() == 0, false
	}
	// A body of unknown length may be a stream (events, a long poll): each
	// piece goes to the browser as it comes, as httputil.ReverseProxy did.
	var flush http.Flusher
	if res.ContentLength < 0 {
		flush, _ = rw.(http.Flusher)
	}
	buf := copyBuffers.Get()
	defer copyBuffers.Put(buf)
	for {
		n, err := res.Body.Read(buf)
		if n > 0 {
			if _, werr := rw.Write(buf[:n]); werr != nil {
				return false, false // the browser went away
			}
			if flush != nil {
				flush.Flush()
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			w.log.Debug("wall upstream body", "target", u.addr, "err", err)
			return false, true
		}
	}
	for k, v := range res.Trailer {
		h[k] = v
	}
	return !res.Close && u.br.Buffered() == 0, false
}

// switchProtocols answers a 101 to an upgrade the wall judged (a ws:
// WebSocket): the browser's connection and u become one two-way copy
// until either ends or the wall closes.
func (w *Wall) switchProtocols(rw http.ResponseWriter, u *upstream, res *http.Response, upgrade string) {
	defer u.release()
	if upgrade == "" || !strings.EqualFold(res.Header.Get("Upgrade"), upgrade) {
		w.log.Debug("wall upstream", "target", u.addr, "err", "switched to a protocol not asked for")
		rw.WriteHeader(http.StatusBadGateway)
		return
	}
	client, brw, err := http.NewResponseController(rw).Hijack()
	if err != nil {
		return
	}
	defer client.Close()
	w.wg.Add(1)
	defer w.wg.Done()
	stop := context.AfterFunc(w.ctx, func() { _ = client.Close(); _ = u.conn.Close() })
	defer stop()
	_ = u.conn.SetDeadline(time.Time{})
	_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\n")
	_ = res.Header.Write(brw.Writer)
	_, _ = brw.WriteString("\r\n")
	if brw.Flush() != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(u.conn, brw.Reader) // buffered bytes, then the socket
		if tc, ok := u.conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, _ = io.Copy(client, u.br)
	_ = client.Close()
	<-done
}
