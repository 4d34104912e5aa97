package wall

import (
	"bytes"
	"context"
	"io"
	"net"
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
