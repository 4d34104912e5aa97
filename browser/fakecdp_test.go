package browser

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeCDP is a loopback DevTools endpoint spoken byte by byte: it upgrades
// the websocket itself (so a test can refuse, stall or answer anything) and
// then answers every command with an empty result.
// A test gets each accepted socket on peers and may write any frame, or any
// raw bytes, onto it.
type fakeCDP struct {
	srv *httptest.Server
	// upgrade, when set, decides a request before the upgrade: false
	// means it wrote its own answer (a refusal).
	upgrade func(w http.ResponseWriter, r *http.Request) bool

	mu       sync.Mutex
	requests []*http.Request // every upgrade request, in order
	methods  []string        // every command received, in order
	peers    chan *fakePeer
}

func newFakeCDP(t testing.TB) *fakeCDP {
	t.Helper()
	f := &fakeCDP{peers: make(chan *fakePeer, 16)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the endpoint's ws:// URL.
func (f *fakeCDP) URL() string {
	return "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/devtools/browser/fake"
}

// onlyOnce refuses every upgrade after the first (503), so a Browser that
// lost its socket stays without one.
func (f *fakeCDP) onlyOnce() {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	f.upgrade = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/json/version" {
			return true
		}
		f.mu.Lock()
		n++
		first := n == 1
		f.mu.Unlock()
		if !first {
			http.Error(w, "no browser", http.StatusServiceUnavailable)
		}
		return first
	}
}

func (f *fakeCDP) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Clone(r.Context()))
	up := f.upgrade
	f.mu.Unlock()
	if up != nil && !up(w, r) {
		return
	}
	if r.URL.Path == "/json/version" {
		// As browserless answers: its own address, no token.
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"Browser":"Chrome/156","webSocketDebuggerUrl":"ws://`+r.Host+`/devtools/browser/fake"}`)
		return
	}
	key := r.Header.Get("Sec-WebSocket-Key")
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || key == "" {
		http.Error(w, "not a websocket", http.StatusBadRequest)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "no hijack", http.StatusInternalServerError)
		return
	}
	c, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n")
	if rw.Flush() != nil {
		c.Close()
		return
	}
	p := &fakePeer{c: c, br: rw.Reader}
	select {
	case f.peers <- p:
	default:
	}
	f.answer(p)
}

// answer replies to every command until the socket ends.
func (f *fakeCDP) answer(p *fakePeer) {
	defer p.c.Close()
	for {
		msg, err := p.read()
		if err != nil {
			return
		}
		var req struct {
			ID     int    `json:"id"`
			Method string `json:"method"`
		}
		if json.Unmarshal(msg, &req) != nil {
			return
		}
		f.mu.Lock()
		f.methods = append(f.methods, req.Method)
		f.mu.Unlock()
		out, _ := json.Marshal(map[string]any{"id": req.ID, "result": json.RawMessage("{}")})
		if p.text(out) != nil {
			return
		}
	}
}

// fakePeer is the server side of one upgraded socket.
type fakePeer struct {
	c  net.Conn
	br *bufio.Reader
	mu sync.Mutex // one writer at a time
}

// read returns the payload of the client's next data frame (clients always
// mask; control frames other than close are skipped).
func (p *fakePeer) read() ([]byte, error) {
	for {
		var h [2]byte
		if _, err := io.ReadFull(p.br, h[:]); err != nil {
			return nil, err
		}
		op := h[0] & 0x0f
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(p.br, b[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(p.br, b[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		if n > 64<<20 {
			return nil, errors.New("frame too large")
		}
		var mask [4]byte
		if h[1]&0x80 != 0 {
			if _, err := io.ReadFull(p.br, mask[:]); err != nil {
				return nil, err
			}
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(p.br, data); err != nil {
			return nil, err
		}
		for i := range data {
			data[i] ^= mask[i%4]
		}
		switch op {
		case 0x8:
			return nil, io.EOF
		case 0x1, 0x2:
			return data, nil
		}
	}
}

// text writes one unmasked text frame.
func (p *fakePeer) text(data []byte) error { return p.raw(frame(data)) }

// raw writes bytes onto the socket as they are.
func (p *fakePeer) raw(b []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.c.Write(b)
	return err
}

// frame encodes data as one unmasked final text frame.
func frame(data []byte) []byte {
	var h []byte
	switch n := len(data); {
	case n < 126:
		h = []byte{0x81, byte(n)}
	case n < 1<<16:
		h = []byte{0x81, 126, byte(n >> 8), byte(n)}
	default:
		h = make([]byte, 10)
		h[0], h[1] = 0x81, 127
		binary.BigEndian.PutUint64(h[2:], uint64(n))
	}
	return append(h, data...)
}
