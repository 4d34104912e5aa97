package browser

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

// attachFake opens a Browser on f and returns it with the server side of
// its socket.
func attachFake(t testing.TB, f *fakeCDP, g *fakeGate) (*Browser, *fakePeer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := Launch(ctx, Options{BrowserURL: f.URL(), Gate: g, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("attach to the fake endpoint: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	select {
	case p := <-f.peers:
		return b, p
	case <-ctx.Done():
		t.Fatal("the fake endpoint saw no socket")
		return nil, nil
	}
}

// What browserless writes at a session timeout, and shapes like it: each
// ends the connection as lost, never the console.
func TestNonProtocolBytesLoseTheConnection(t *testing.T) {
	cases := map[string][]byte{
		"408 as raw HTTP":      []byte("HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain\r\n\r\nTimeout"),
		"408 text as a frame":  frame([]byte("Timeout")),
		"event of wrong shape": frame([]byte(`{"method":"Target.targetCreated","params":{"targetInfo":5}}`)),
		"paused without request": frame([]byte(
			`{"method":"Fetch.requestPaused","params":{"requestId":"1","frameId":"f","resourceType":"Document"}}`)),
		"response id not a number": frame([]byte(`{"id":"7","result":{}}`)),
		"binary garbage":           {0x82, 0x03, 0xff, 0x00, 0x7b},
	}
	for name, bytes := range cases {
		t.Run(name, func(t *testing.T) {
			g := newFakeGate()
			f := newFakeCDP(t)
			f.onlyOnce()
			b, p := attachFake(t, f, g)
			if err := p.raw(bytes); err != nil {
				t.Fatal(err)
			}
			select {
			case <-b.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the connection outlived bytes that are not the DevTools protocol")
			}
			wantCode(t, b.Available(), errcode.BrowserUnavailable)
			g.until(t, "the header to say the attached browser is gone", func(g *fakeGate) bool {
				n := len(g.statuses)
				return n > 0 && strings.HasPrefix(g.statuses[n-1], "the attached browser is gone")
			})
		})
	}
}

// An event without params is Chromium's (for events that have none) and
// must neither crash rod's Load nor end the connection.
func TestCheckFrameGivesParamlessEventsEmptyParams(t *testing.T) {
	out, err := checkFrame([]byte(`{"method":"Target.targetCreated"}`))
	if err == nil {
		// targetInfo is required: with {} params the event lacks it.
		t.Fatalf("a targetCreated without targetInfo passed: %s", out)
	}
	out, err = checkFrame([]byte(`{"method":"Page.frameResized"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`"params":{}`)) {
		t.Fatalf("got %s, want empty params", out)
	}
	if _, err := checkFrame([]byte(`{"method":"Page.frameNavigated","params":{"frame":{"id":1}}}`)); !errors.Is(err, errBadFrame) {
		t.Fatalf("an event rod cannot decode passed: %v", err)
	}
	for _, ok := range []string{`{"id":3,"result":{"x":1}}`, `{"method":"Some.unknown","params":[1]}`, `{"id":4,"error":{"code":-32000,"message":"m"}}`} {
		if _, err := checkFrame([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// FuzzCDPSocket writes arbitrary bytes onto an attached Browser's DevTools
// socket, as frames or raw, then closes it: whatever they are, the Browser
// ends up with a lost connection and closes cleanly; a panic anywhere (the
// websocket, rod's client and event hub, the Browser's handlers) fails.
func FuzzCDPSocket(f *testing.F) {
	f.Add([]byte("HTTP/1.1 408 Request Timeout\r\n\r\nTimeout"), false)
	f.Add([]byte("Timeout"), true)
	f.Add([]byte(`{"method":"Target.targetCreated","params":{"targetInfo":{"targetId":"T","type":"page","title":"","url":"https://a.test/","attached":false,"canAccessOpener":false}}}`), true)
	f.Add([]byte(`{"method":"Fetch.requestPaused","params":{"requestId":"1","request":{"url":"https://a.test/","method":"GET","headers":{},"initialPriority":"High","referrerPolicy":"no-referrer"},"frameId":"T","resourceType":"Document"}}`), true)
	f.Add([]byte(`{"method":"Fetch.requestPaused","params":{"requestId":"2","request":{"url":"https://a.test/x","method":"GET","headers":{},"initialPriority":"High","referrerPolicy":"no-referrer"},"frameId":"T","resourceType":"Document","responseStatusCode":302,"responseHeaders":[null]}}`), true)
	f.Add([]byte(`{"method":"Target.attachedToTarget","params":{"sessionId":"S","targetInfo":{"targetId":"T","type":"page"},"waitingForDebugger":true}}`+"\x00"+`{"method":"Page.lifecycleEvent","sessionId":"S","params":{"frameId":"T","loaderId":"L","name":"load","timestamp":1}}`+"\x00"+`{"method":"Target.targetDestroyed","params":{"targetId":"T"}}`), true)
	f.Add([]byte{0x88, 0x02, 0x03, 0xe8}, false)
	f.Add([]byte{0x81, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, false)
	srv := newFakeCDP(f)
	f.Fuzz(func(t *testing.T, data []byte, framed bool) {
		g := newFakeGate()
		b, p := attachFake(t, srv, g)
		if framed {
			for _, msg := range bytes.Split(data, []byte{0}) {
				_ = p.text(msg)
			}
		} else {
			_ = p.raw(data)
		}
		_ = p.c.Close()
		select {
		case <-b.Done():
		case <-time.After(20 * time.Second):
			t.Fatal("the connection outlived its socket")
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
