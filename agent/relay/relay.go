// Package relay is `tabwarden mcp-stdio`: it lets an MCP host that only
// speaks stdio reach the running console's Streamable HTTP endpoint.
//
// The relay is a pipe, not a server: each JSON-RPC message read from stdin
// is posted to the console with the console's default token (from the
// first live endpoint file on mcpserver.EndpointSearchPath), and every message the console
// sends back is written to stdout, unchanged. Protocol negotiation, sessions
// and conversation identity are the console's business, so the host gets
// what an HTTP host would: a host that negotiates a stateful protocol gets
// one MCP session (one conversation) for the life of the relay. A
// sessionless host gets one conversation per relay process too: the relay
// sends a random instance id of its own (mcpserver.InstanceHeader).
//
// Invariants: calls are forwarded concurrently (a call waiting for the
// operator never holds up another call or a cancellation); a call the
// console could not take gets a JSON-RPC error response, so the host never
// waits forever; when stdin ends, the relay first writes the answers of the
// calls it forwarded (unless its host, its parent process, is gone), then
// closes its MCP session (DELETE) and returns nil; when the console goes
// away, it returns an error.
package relay

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent/mcpserver"
)

// ErrNoConsole is wrapped by the error Run returns when no console answers.
var ErrNoConsole = errors.New("no tabwarden console is running")

// Run relays between stdin/stdout and the console named by the first live
// endpoint file on mcpserver.EndpointSearchPath. It returns when stdin ends
// (nil), ctx is done, or the console connection fails.
func Run(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	ep, _, err := Locate("", "")
	if err != nil {
		return err
	}
	return RunEndpoint(ctx, ep, stdin, stdout)
}

// Locate finds the console to relay to. where is empty (search the endpoint
// files), the path of an endpoint file, or the console's http(s) URL; token,
// when given, overrides the file's. A URL without a token takes the token of
// an endpoint file that names the same URL. The second result says where the
// endpoint came from, for messages.
func Locate(where, token string) (mcpserver.Endpoint, string, error) {
	return LocateWith(where, token, StdioHints)
}

// Hints are what a command tells its user to do when Locate finds no
// console or cannot tell a URL's token: each command offers its own flags.
type Hints struct {
	NoConsole, UnknownURL string
}

// StdioHints are mcp-stdio's: it takes a file or a URL, and a token.
var StdioHints = Hints{
	NoConsole:  "start `tabwarden` first, or pass --endpoint FILE|URL",
	UnknownURL: "pass --token",
}

// LocateWith is Locate with the hints of the command that asks.
func LocateWith(where, token string, hints Hints) (mcpserver.Endpoint, string, error) {
	switch {
	case where == "":
		eps, paths, err := mcpserver.LiveEndpoints()
		if errors.Is(err, mcpserver.ErrNoEndpoint) {
			return mcpserver.Endpoint{}, "", fmt.Errorf("%w (%v); %s", ErrNoConsole, err, hints.NoConsole)
		}
		if err != nil {
			return mcpserver.Endpoint{}, "", fmt.Errorf("read the console's endpoint: %w", err)
		}
		// A host's own token names its console: with more than one live,
		// the first that accepts it (the first found when none does, for
		// RunEndpoint's clear refusal).
		if token != "" && len(eps) > 1 {
			for i, ep := range eps {
				if accepts(ep.URL, token) {
					return withToken(ep, token), paths[i], nil
				}
			}
		}
		return withToken(eps[0], token), paths[0], nil
	case strings.HasPrefix(where, "http://") || strings.HasPrefix(where, "https://"):
		if u, err := url.Parse(where); err != nil || u.Host == "" {
			return mcpserver.Endpoint{}, "", fmt.Errorf("--endpoint %q is not a URL with a host", where)
		}
		if token != "" {
			return mcpserver.Endpoint{URL: where, Token: token}, where, nil
		}
		if ep, path, err := mcpserver.FindEndpoint(); err == nil && ep.URL == where {
			return ep, path, nil
		}
		return mcpserver.Endpoint{}, "", fmt.Errorf("--endpoint %s: no endpoint file names this URL, so its token is unknown; %s", where, hints.UnknownURL)
	default:
		ep, err := mcpserver.ReadEndpointFile(where)
		if errors.Is(err, fs.ErrNotExist) {
			return ep, "", fmt.Errorf("%w (no %s); start `tabwarden` first", ErrNoConsole, where)
		}
		if err != nil {
			return ep, "", fmt.Errorf("read the console's endpoint: %w", err)
		}
		return withToken(ep, token), where, nil
	}
}

func withToken(ep mcpserver.Endpoint, token string) mcpserver.Endpoint {
	if token != "" {
		ep.Token = token
	}
	return ep
}

// RunEndpoint is Run against a known endpoint.
func RunEndpoint(ctx context.Context, ep mcpserver.Endpoint, stdin io.Reader, stdout io.Writer) error {
	// One instance id per relay process: two hosts started with one
	// configuration are two conversations even in the sessionless protocol,
	// where the token alone would make them one.
	client := &http.Client{Transport: bearer{secret: ep.Token, instance: rand.Text()}}
	if err := probe(ctx, client, ep.URL); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	local, err := (&mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}).Connect(ctx)
	if err != nil {
		return err
	}
	defer local.Close()
	remote, err := (&mcp.StreamableClientTransport{Endpoint: ep.URL, HTTPClient: client, MaxRetries: -1}).Connect(ctx)
	if err != nil {
		return err
	}
	// Close sends the DELETE that ends a stateful session (and with it the
	// conversation); it must run before the process exits.
	defer remote.Close()

	done := make(chan error, 2)
	var calls sync.WaitGroup
	inFlight := newPending()
	parent := os.Getppid()
	// A call's error answer that cannot reach stdout ends the relay, as a
	// failed write in the loop below does.
	var answerErr error
	var answerOnce sync.Once
	answerFailed := func(err error) {
		answerOnce.Do(func() {
			answerErr = fmt.Errorf("write to stdout: %w", err)
			cancel()
		})
	}
	go func() {
		for {
			msg, err := local.Read(ctx)
			if err != nil {
				if errors.Is(err, io.EOF) {
					// A host that wrote its calls and closed its end (a
					// script, a pipe) still gets their answers; a host
					// that died (the relay's parent is gone) gets none,
					// and its calls are withdrawn with the session.
					inFlight.drain(ctx, func() bool { return os.Getppid() != parent })
					err = nil
				}
				if ctx.Err() != nil {
					err = nil
				}
				done <- err
				return
			}
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				inFlight.add(req.ID)
				calls.Add(1)
				go func() {
					defer calls.Done()
					answered, err := forward(ctx, local, remote, req)
					if answered {
						inFlight.done(req.ID)
					}
					if err != nil {
						answerFailed(err)
					}
				}()
				continue
			}
			// Notifications and responses keep their order (initialized
			// must follow initialize's answer; cancellations are cheap).
			if err := remote.Write(ctx, msg); err != nil && ctx.Err() == nil {
				done <- consoleError(err)
				return
			}
		}
	}()
	go func() {
		for {
			msg, err := remote.Read(ctx)
			if err != nil {
				if ctx.Err() != nil {
					err = nil
				}
				done <- consoleError(err)
				return
			}
			if err := local.Write(ctx, msg); err != nil {
				done <- fmt.Errorf("write to stdout: %w", err)
				return
			}
			if resp, ok := msg.(*jsonrpc.Response); ok {
				inFlight.done(resp.ID)
			}
		}
	}()
	err = <-done
	cancel()
	calls.Wait()
	if err == nil {
		err = answerErr // set before calls.Wait returned, if at all
	}
	return err
}

// forward posts one call; if the console did not take it, the host gets an
// error response for it instead of silence (answered). The error is that
// response's failed write to the host.
func forward(ctx context.Context, local, remote mcp.Connection, req *jsonrpc.Request) (answered bool, err error) {
	err = remote.Write(ctx, req)
	if err == nil || ctx.Err() != nil {
		return false, nil
	}
	wire := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: consoleError(err).Error()}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		// The console answered with a JSON-RPC error (e.g. an unsupported
		// protocol version, which the host may negotiate around): pass it on.
		wire = we
	}
	return true, local.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: wire})
}

// pending is the set of the host's calls the relay has not answered yet.
type pending struct {
	mu      sync.Mutex
	ids     map[jsonrpc.ID]bool
	changed chan struct{} // closed and replaced when a call is answered
}

func newPending() *pending {
	return &pending{ids: map[jsonrpc.ID]bool{}, changed: make(chan struct{})}
}

func (p *pending) add(id jsonrpc.ID) {
	p.mu.Lock()
	p.ids[id] = true
	p.mu.Unlock()
}

func (p *pending) done(id jsonrpc.ID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids[id] {
		delete(p.ids, id)
		close(p.changed)
		p.changed = make(chan struct{})
	}
}

// drain returns once every pending call is answered, ctx ends or gone
// says the host is gone (checked every parentCheck).
func (p *pending) drain(ctx context.Context, gone func() bool) {
	tick := time.NewTicker(parentCheck)
	defer tick.Stop()
	for {
		p.mu.Lock()
		n, ch := len(p.ids), p.changed
		p.mu.Unlock()
		if n == 0 || gone() {
			return
		}
		select {
		case <-ch:
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	}
}

// parentCheck is how often a draining relay looks whether its host died.
const parentCheck = 200 * time.Millisecond

// consoleError makes transport failures say what the operator should do.
func consoleError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, http.StatusText(http.StatusUnauthorized)):
		return fmt.Errorf("the tabwarden console rejected the relay's token (it was revoked, or the console restarted): %w", err)
	case errors.Is(err, mcp.ErrSessionMissing):
		return fmt.Errorf("the tabwarden console ended this MCP session: %w", err)
	}
	return fmt.Errorf("tabwarden console connection: %w", err)
}

// probe checks that a console answers at url and accepts the token before
// the host is told anything, so a stale endpoint file gives a clear error.
func probe(ctx context.Context, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("endpoint %q: %w", url, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%w (nothing answers at %s); start `tabwarden` first", ErrNoConsole, url)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("the tabwarden console at %s rejected the token (revoked, or written by an earlier console)", url)
	}
	// Any other answer (400: a GET without a session) means a console with
	// this token is there.
	return nil
}

// accepts reports whether a console answers at url and takes token.
func accepts(url, token string) bool {
	client := &http.Client{Transport: bearer{secret: token, instance: rand.Text()}}
	return probe(context.Background(), client, url) == nil
}

type bearer struct{ secret, instance string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.secret)
	r.Header.Set(mcpserver.InstanceHeader, b.instance)
	return http.DefaultTransport.RoundTrip(r)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
