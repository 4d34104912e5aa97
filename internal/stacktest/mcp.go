package stacktest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
)

// Dispatcher is an agent.Dispatcher over the stack for an MCP server,
// which registers a conversation per client session itself; tune may
// adjust its config. It closes at t's cleanup.
func (s *Stack) Dispatcher(t testing.TB, tune ...func(*agent.DispatcherConfig)) *agent.Dispatcher {
	t.Helper()
	cfg := agent.DispatcherConfig{Engine: s.Engine, Browser: s.Browser}
	for _, f := range tune {
		f(&cfg)
	}
	d := agent.NewDispatcher(cfg)
	t.Cleanup(d.Close)
	return d
}

// Connect opens an SDK client session on the endpoint url with the
// bearer secret, and checks that version (when not "") was negotiated.
// The session closes at t's cleanup.
func Connect(t testing.TB, url, secret, version, clientName string) *mcp.ClientSession {
	t.Helper()
	cs, err := Dial(url, secret, version, clientName)
	if err != nil {
		t.Fatalf("connect %s: %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; version != "" && got != version {
		t.Fatalf("negotiated protocol %q, want %q", got, version)
	}
	return cs
}

// Dial opens an SDK client session without a test to fail, for a client
// that runs in a process of its own; the caller closes it.
func Dial(url, secret, version, clientName string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: clientName, Version: "1.0"}, nil)
	tr := &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: Bearer{Secret: secret}},
		MaxRetries: -1,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	return client.Connect(ctx, tr, opts)
}

// CallTool calls name on cs and fails the test on a transport or protocol
// error; a tool's own failure is in the result.
func CallTool(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// Bearer presents an agent token on every request; an empty Secret sends
// none (an unauthenticated client).
type Bearer struct {
	Secret string
	Base   http.RoundTripper // nil: http.DefaultTransport
}

func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.Secret != "" {
		r.Header.Set("Authorization", "Bearer "+b.Secret)
	}
	base := b.Base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}
