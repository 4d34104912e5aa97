package wall

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzWall writes any bytes to a wall whose policy allows no website (and
// blocks uploads): whatever they are, the wall must not crash, and the
// destination they name must never see a connection. "DEST" in the input
// is replaced by the destination's host:port.
func FuzzWall(f *testing.F) {
	for _, s := range []string{
		"CONNECT DEST HTTP/1.1\r\nHost: DEST\r\n\r\n\x16\x03\x01",
		"GET http://DEST/ HTTP/1.1\r\nHost: DEST\r\n\r\n",
		"POST http://DEST/x HTTP/1.1\r\nHost: DEST\r\nContent-Length: 3\r\n\r\nabc",
		"GET http://DEST/ws HTTP/1.1\r\nHost: DEST\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
		"CONNECT DEST HTTP/1.0\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: DEST\r\n\r\n",
		"\x00\x01\x02garbage\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	d := newDest(f)
	w, err := Start(Options{Policy: mustPolicy(f, []string{}, true)})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = w.Close() })
	dest := []byte(d.addr())
	f.Fuzz(func(t *testing.T, raw []byte) {
		raw = bytes.ReplaceAll(raw, []byte("DEST"), dest)
		c, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", w.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = c.Write(raw)
		_ = c.(*net.TCPConn).CloseWrite()
		_, _ = io.Copy(io.Discard, c)
		if n := d.accepts.Load(); n != 0 {
			t.Fatalf("the destination accepted %d connections for %q", n, raw)
		}
	})
}

// FuzzRelayAnswer has a site answer an allowed plain request (a WebSocket
// upgrade, so a 101 is taken up too) with any bytes: whatever they are,
// the browser's connection ends by itself, with an answer or without one,
// and the wall still closes.
func FuzzRelayAnswer(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-A\r\n\r\n2\r\nok\r\n0\r\nX-A: 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nframes",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
		"HTTP/1.0 200 OK\r\n\r\nuntil close",
		"\x00garbage",
	} {
		f.Add([]byte(s))
	}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = ln.Close() })
	var current atomic.Value
	current.Store([]byte{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(2 * time.Second))
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				_, _ = c.Write(current.Load().([]byte))
			}()
		}
	}()
	site := ln.Addr().String()
	w, err := Start(Options{Policy: mustPolicy(f, []string{"http://" + site}, false)})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		done := make(chan error, 1)
		go func() { done <- w.Close() }()
		select {
		case err := <-done:
			if err != nil {
				f.Errorf("Close: %v", err)
			}
		case <-time.After(10 * time.Second):
			f.Error("Close hung after the fuzzed answers")
		}
	})
	f.Fuzz(func(t *testing.T, answer []byte) {
		current.Store(answer)
		c, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", w.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(c, "GET http://"+site+"/ws HTTP/1.1\r\nHost: "+site+"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		// An answer whose body ends (the connection then waits for the
		// next request), or an upgraded or broken connection that ends.
		br := bufio.NewReader(c)
		var rest io.Reader = br
		if res, err := http.ReadResponse(br, nil); err == nil {
			defer res.Body.Close()
			if res.StatusCode != http.StatusSwitchingProtocols {
				rest = res.Body
			}
		}
		if _, err := io.Copy(io.Discard, rest); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the browser's answer never ended for the site's %q", answer)
			}
		}
	})
}
