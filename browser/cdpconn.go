package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/coder/websocket"
	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/proto"
)

// maxFrame bounds one DevTools message. Chromium's largest are screenshots
// and screencast frames (a few MiB); the bound only keeps a hostile or
// broken endpoint from making the console buffer without end.
const maxFrame = 256 << 20

// errBadFrame marks a message that is not the DevTools protocol; the
// connection is then treated as lost.
var errBadFrame = errors.New("the browser endpoint sent something that is not the DevTools protocol")

// wsConn is the transport under rod's cdp.Client (it implements
// cdp.WebSocketable). rod decodes every message it reads with a panic on
// failure, and so does rod.Message.Load, so a fleet engine that writes an
// HTTP status or any other non-protocol bytes onto the socket would crash
// the console. wsConn hands rod only messages that decode into exactly the
// shapes rod and proto decode them into; anything else ends the
// connection, which the Browser treats as a lost browser.
type wsConn struct {
	ws     *websocket.Conn
	ctx    context.Context // the socket's lifetime; cancelled by Close
	cancel context.CancelFunc

	once sync.Once
}

var _ cdp.WebSocketable = (*wsConn)(nil)

// dialCDP opens the DevTools websocket at wsURL. ctx bounds the handshake
// (rod's own dialer ignores it). header travels with the upgrade request.
// On a refusal the *http.Response is returned with the error, so the caller
// can say what the endpoint answered.
func dialCDP(ctx context.Context, wsURL string, header http.Header) (*wsConn, *handshakeAnswer, error) {
	ws, res, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{
		HTTPHeader:      header,
		CompressionMode: websocket.CompressionDisabled,
	})
	var answer *handshakeAnswer
	if res != nil {
		answer = &handshakeAnswer{code: res.StatusCode, status: res.Status}
		if err != nil && res.Body != nil {
			_ = res.Body.Close()
		}
	}
	if err != nil {
		return nil, answer, err
	}
	ws.SetReadLimit(maxFrame)
	life, cancel := context.WithCancel(context.Background())
	return &wsConn{ws: ws, ctx: life, cancel: cancel}, answer, nil
}

// handshakeAnswer is the HTTP status an endpoint answered the upgrade with;
// the body stays with the websocket library (it is the connection on 101).
type handshakeAnswer struct {
	code   int
	status string
}

// refused reports whether the endpoint answered without upgrading.
func (a *handshakeAnswer) refused() bool {
	return a != nil && a.code != http.StatusSwitchingProtocols
}

// Send writes one text message.
func (w *wsConn) Send(data []byte) error {
	return w.ws.Write(w.ctx, websocket.MessageText, data)
}

// Read returns the next message rod can decode without panicking. Any other
// message closes the connection and is reported as an error, which rod's
// client takes as the end of the connection.
func (w *wsConn) Read() ([]byte, error) {
	_, data, err := w.ws.Read(w.ctx)
	if err != nil {
		return nil, err
	}
	msg, err := checkFrame(data)
	if err != nil {
		_ = w.ws.Close(websocket.StatusUnsupportedData, "not the DevTools protocol")
		w.Close()
		return nil, err
	}
	return msg, nil
}

// Close drops the connection; safe to call more than once.
func (w *wsConn) Close() error {
	w.once.Do(func() {
		w.cancel()
		_ = w.ws.CloseNow()
	})
	return nil
}

// checkFrame decodes data the way rod's cdp.Client and rod.Message.Load
// will, and fails where either would panic. An event without params
// (which Load cannot take) gets empty params.
func checkFrame(data []byte) ([]byte, error) {
	var id struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal(data, &id); err != nil {
		return nil, fmt.Errorf("%w (%v)", errBadFrame, err)
	}
	if id.ID != 0 {
		var res cdp.Response
		if err := json.Unmarshal(data, &res); err != nil {
			return nil, fmt.Errorf("%w (%v)", errBadFrame, err)
		}
		return data, nil
	}
	var evt cdp.Event
	if err := json.Unmarshal(data, &evt); err != nil {
		return nil, fmt.Errorf("%w (%v)", errBadFrame, err)
	}
	t := proto.GetType(evt.Method)
	if t == nil {
		return data, nil // nobody can Load an unknown event
	}
	v := reflect.New(t).Interface()
	if _, ok := v.(proto.Event); !ok {
		return data, nil // a command's name: nothing Loads it either
	}
	if evt.Params == nil {
		// rod.Message.Load panics on an event without params.
		evt.Params = json.RawMessage("{}")
		fixed, err := json.Marshal(&evt)
		if err != nil {
			return nil, fmt.Errorf("%w (%v)", errBadFrame, err)
		}
		data = fixed
	}
	if err := json.Unmarshal(evt.Params, v); err != nil {
		return nil, fmt.Errorf("%w (%s: %v)", errBadFrame, evt.Method, err)
	}
	if consumed[evt.Method] {
		if field := missingRequired(reflect.ValueOf(v).Elem(), ""); field != "" {
			return nil, fmt.Errorf("%w (%s without %s)", errBadFrame, evt.Method, field)
		}
	}
	return data, nil
}

// consumed are the events the Browser's event loop reads. Chromium always
// fills their required fields; a message without one is not Chromium's,
// and a handler must not meet a nil where the protocol promises a value.
var consumed = map[string]bool{
	"Fetch.requestPaused":      true,
	"Target.targetCreated":     true,
	"Target.targetInfoChanged": true,
	"Target.attachedToTarget":  true,
	"Target.targetDestroyed":   true,
	"Page.lifecycleEvent":      true,
	"Page.fileChooserOpened":   true,
}

// missingRequired returns the path of the first nil pointer that proto
// declares required (no omitempty) in v, or of a nil element of any slice
// of pointers; "" when there is none.
func missingRequired(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return ""
		}
		return missingRequired(v.Elem(), path)
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			el := v.Index(i)
			p := fmt.Sprintf("%s[%d]", path, i)
			if el.Kind() == reflect.Pointer && el.IsNil() {
				return p
			}
			if m := missingRequired(el, p); m != "" {
				return m
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			p := strings.TrimPrefix(path+"."+name, ".")
			fv := v.Field(i)
			if fv.Kind() == reflect.Pointer && fv.IsNil() && !strings.Contains(opts, "omitempty") {
				return p
			}
			if m := missingRequired(fv, p); m != "" {
				return m
			}
		}
	}
	return ""
}
