package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// gridSession is a Selenium Grid 4 WebDriver session whose browser the
// console drives over the Grid's CDP proxy (the session's se:cdp). The
// console creates it on attach and deletes it on Close or when it attaches
// again, so the Grid frees the slot.
type gridSession struct {
	base   string // the Grid's URL as given, without query
	id     string
	header http.Header
}

// isGrid reports whether base answers WebDriver's /status as a Grid does.
func isGrid(ctx context.Context, base *url.URL, header http.Header) bool {
	var st struct {
		Value *struct {
			Ready *bool `json:"ready"`
		} `json:"value"`
	}
	if err := gridCall(ctx, http.MethodGet, gridURL(base, "/status"), header, nil, &st); err != nil {
		return false
	}
	return st.Value != nil && st.Value.Ready != nil
}

// newGridSession asks the Grid for a Chrome/Chromium session started with
// the launch flags and returns it with its se:cdp websocket URL.
func newGridSession(ctx context.Context, base *url.URL, header http.Header) (*gridSession, string, error) {
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName":        "chrome",
		"goog:chromeOptions": map[string]any{"args": LaunchFlags()},
	}}}
	var res struct {
		Value struct {
			SessionID    string         `json:"sessionId"`
			Capabilities map[string]any `json:"capabilities"`
			Error        string         `json:"error"`
			Message      string         `json:"message"`
		} `json:"value"`
	}
	if err := gridCall(ctx, http.MethodPost, gridURL(base, "/session"), header, caps, &res); err != nil {
		return nil, "", fmt.Errorf("the Grid gave no session: %w", err)
	}
	if res.Value.SessionID == "" {
		return nil, "", fmt.Errorf("the Grid gave no session: %s %s", res.Value.Error, res.Value.Message)
	}
	g := &gridSession{base: gridURL(base, ""), id: res.Value.SessionID, header: header}
	cdpURL, _ := res.Value.Capabilities["se:cdp"].(string)
	ws, err := url.Parse(cdpURL)
	if err != nil || ws.Host == "" {
		g.delete()
		return nil, "", errors.New("the Grid's session has no se:cdp endpoint (is it Selenium Grid 4 with a Chromium-based node?)")
	}
	return g, ws.String(), nil
}

// delete ends the WebDriver session, best effort, within a few seconds.
func (g *gridSession) delete() {
	if g == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = gridCall(ctx, http.MethodDelete, g.base+"/session/"+url.PathEscape(g.id), g.header, nil, nil)
}

// gridURL is base's path with p appended, keeping base's query.
func gridURL(base *url.URL, p string) string {
	u := *base
	u.Path = strings.TrimSuffix(base.Path, "/") + p
	return u.String()
}

// gridCall makes one WebDriver request and decodes its JSON answer.
func gridCall(ctx context.Context, method, u string, header http.Header, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		return refusal(res)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(out)
}
