package browser

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// EnvBrowserToken names the environment variable that holds the fleet
// engine's credential when --browser-token is not given.
const EnvBrowserToken = "TABWARDEN_BROWSER_TOKEN"

// Attach deadlines. A fleet engine queues a connection it has no browser
// for by holding the websocket upgrade open, so the handshake may wait that
// long; the launch deadline (the hook going on, the first calls) only
// starts once the handshake is done.
const (
	defaultHandshakeTimeout = 2 * time.Minute
	// slotNotice is how long a handshake may take before the console says
	// it is queued: Chromium and an idle fleet answer in milliseconds.
	slotNotice = time.Second
)

// StatusWaitingForSlot starts the header while the fleet engine queues
// the console.
const StatusWaitingForSlot = "waiting for a browser slot at "

// ShownURL is how a browser endpoint appears anywhere a person or an agent
// can read it (screen, errors, logs, audit): scheme, host and path, with
// any credentials, query and fragment removed, since a fleet's token often
// rides in the query.
func ShownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		// Not a URL we can take apart: show only what precedes anything
		// that could be a credential.
		s := raw
		if i := strings.IndexAny(s, "?#@"); i >= 0 {
			s = s[:i]
		}
		return s
	}
	u.User, u.RawQuery, u.Fragment, u.ForceQuery, u.RawFragment = nil, "", "", false, ""
	return u.String()
}

// secrets are the strings of an attach configuration that must never be
// shown: the token, and every query value and password in the URL (an
// engine may take its credential under any name).
func secrets(opts *Options) []string {
	var s []string
	if opts.BrowserToken != "" {
		s = append(s, opts.BrowserToken)
	}
	if u, err := url.Parse(opts.BrowserURL); err == nil {
		if p, ok := u.User.Password(); ok && p != "" {
			s = append(s, p)
		}
		if u.User != nil && u.User.Username() != "" {
			s = append(s, u.User.Username())
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				if v != "" {
					s = append(s, v)
				}
			}
		}
		if u.RawQuery != "" {
			s = append(s, u.RawQuery)
		}
	}
	return s
}

// scrub removes every secret of opts from text: the raw URL first (shown
// in its place as ShownURL), then each secret on its own, since errors from
// the HTTP and websocket layers quote URLs in their own forms.
func scrub(opts *Options, text string) string {
	if opts.BrowserURL != "" {
		text = strings.ReplaceAll(text, opts.BrowserURL, ShownURL(opts.BrowserURL))
	}
	for _, s := range secrets(opts) {
		text = strings.ReplaceAll(text, s, "[redacted]")
		if q := url.QueryEscape(s); q != s {
			text = strings.ReplaceAll(text, q, "[redacted]")
		}
	}
	return text
}

// authHeader carries the token the way fleet engines accept it on the
// upgrade and on /json/version: a token of the form user:password as HTTP
// Basic (Selenium Grid), any other as a Bearer token (browserless). Nil
// without a token.
func authHeader(token string) http.Header {
	if token == "" {
		return nil
	}
	h := http.Header{}
	if strings.Contains(token, ":") {
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(token)))
	} else {
		h.Set("Authorization", "Bearer "+token)
	}
	return h
}

// attach is Launch for --browser-url: find the endpoint's websocket, then
// open a Browser on it. ctx bounds it all; the handshake has its own
// deadline and the launch deadline starts after it.
func attach(ctx context.Context, opts Options, log *slog.Logger) (*Browser, error) {
	hctx, cancel := context.WithTimeout(ctx, opts.handshakeTimeout())
	defer cancel()
	wsURL, grid, err := resolveEndpoint(hctx, opts.BrowserURL, authHeader(opts.BrowserToken))
	if err != nil {
		return nil, unavailable("%s", scrub(&opts, fmt.Sprintf("cannot reach the browser at %s: %v", ShownURL(opts.BrowserURL), err)))
	}
	hold, err := startHold()
	if err != nil {
		grid.delete()
		return nil, unavailable("start the navigation hold: %v", err)
	}
	b, err := open(ctx, opts, log, nil, wsURL, hold)
	if err != nil {
		grid.delete()
		return nil, err
	}
	b.mu.Lock()
	b.grid = grid
	b.mu.Unlock()
	return b, nil
}

func (o *Options) handshakeTimeout() time.Duration {
	if o.HandshakeTimeout > 0 {
		return o.HandshakeTimeout
	}
	return defaultHandshakeTimeout
}

// resolveEndpoint accepts a ws:// DevTools URL as is, or asks an http(s)
// endpoint (or bare host:port) for its browser websocket URL. The query of
// raw (where a fleet's token may be) goes to /json/version and stays on
// the websocket URL.
//
// A Selenium Grid 4 (no /json/version, a WebDriver /status) gets a new
// WebDriver session, returned with its se:cdp URL; the caller deletes it.
func resolveEndpoint(ctx context.Context, raw string, header http.Header) (string, *gridSession, error) {
	if strings.HasPrefix(raw, "ws://") || strings.HasPrefix(raw, "wss://") {
		return raw, nil, nil
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", nil, err
	}
	v := *u
	v.Path = strings.TrimSuffix(u.Path, "/") + "/json/version"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.String(), nil)
	if err != nil {
		return "", nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusNotFound && isGrid(ctx, u, header) {
		g, ws, err := newGridSession(ctx, u, header)
		return ws, g, err
	}
	if res.StatusCode != http.StatusOK {
		return "", nil, refusal(res)
	}
	var ver struct {
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&ver); err != nil {
		return "", nil, fmt.Errorf("/json/version is not a DevTools answer: %w", err)
	}
	ws, err := url.Parse(ver.WebSocketDebuggerURL)
	if err != nil || ws.Host == "" {
		return "", nil, errors.New("/json/version gave no webSocketDebuggerUrl")
	}
	// Chromium names itself by the address it bound; the operator may
	// reach it through another (a tunnel, a load balancer), so keep the
	// host they gave, and their query.
	ws.Host = u.Host
	if u.Scheme == "https" {
		ws.Scheme = "wss"
	}
	if ws.RawQuery == "" {
		ws.RawQuery = u.RawQuery
	}
	return ws.String(), nil, nil
}

// refusal is the clear error for an endpoint that answered a handshake or
// /json/version with an HTTP status instead of the protocol.
func refusal(res *http.Response) error {
	return refusedWith(res.StatusCode, res.Status)
}

func refusedWith(code int, status string) error {
	if status == "" {
		status = fmt.Sprint(code)
	}
	switch code {
	case http.StatusTooManyRequests:
		return fmt.Errorf("the fleet's queue is full (%s); try again when a browser is free, or raise the engine's concurrency or queue length", status)
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("the endpoint refused the credential (%s); pass the fleet's token with --browser-token or %s", status, EnvBrowserToken)
	case http.StatusServiceUnavailable:
		return fmt.Errorf("the endpoint has no browser to give (%s); try again later", status)
	case http.StatusNotFound:
		return fmt.Errorf("the endpoint has no DevTools there (%s); check the path of --browser-url", status)
	default:
		return fmt.Errorf("the endpoint refused the connection (%s)", status)
	}
}

// dialAttached opens the DevTools websocket of an attached browser under
// the handshake deadline, saying on screen (and through Options.Waiting)
// that the console is queued once the upgrade takes longer than
// slotNotice.
func (b *Browser) dialAttached(ctx context.Context, wsURL string) (*wsConn, error) {
	hctx, cancel := context.WithTimeout(ctx, b.opts.handshakeTimeout())
	defer cancel()
	shown := ShownURL(b.opts.BrowserURL)
	notice := time.AfterFunc(slotNotice, func() {
		msg := StatusWaitingForSlot + shown
		b.showStatus(msg)
		if b.opts.Waiting != nil {
			b.opts.Waiting(msg)
		}
	})
	ws, res, err := dialCDP(hctx, wsURL, authHeader(b.opts.BrowserToken))
	notice.Stop()
	if err == nil {
		return ws, nil
	}
	var why string
	switch {
	case res.refused():
		why = refusedWith(res.code, res.status).Error()
	case errors.Is(hctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		why = fmt.Sprintf("no browser slot within %s (the fleet is busy); try again later", b.opts.handshakeTimeout())
	default:
		why = err.Error()
	}
	return nil, unavailable("%s", scrub(&b.opts, fmt.Sprintf("attach to the browser at %s: %s", shown, why)))
}
