// Package servetest starts tabwarden's MCP server for a test, on a
// stacktest stack or on a surface and engine of the test's own, and
// connects MCP Go SDK clients to it. It is apart from stacktest because
// the server's own tests use stacktest: a kit that imported the server
// could not be imported by them. Only _test.go files import it.
package servetest

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// MCP is a started MCP server: the endpoint a client connects to and the
// default agent token it presents.
type MCP struct {
	*mcpserver.Server
	URL    string
	Secret string
}

// Start starts the MCP server over surface (usually Stack.Dispatcher) on
// this stack's engine, reporting version "test"; tune may adjust its
// config first. It listens on 127.0.0.1 only and closes at t's cleanup,
// before the dispatcher and browser it drives (cleanups run last-in
// first-out).
func Start(t testing.TB, ctx context.Context, s *stacktest.Stack, surface agent.Surface, tune ...func(*mcpserver.Config)) *MCP {
	t.Helper()
	return StartConfig(t, ctx, mcpserver.Config{Surface: surface, Engine: s.Engine, Version: "test"}, tune...)
}

// StartConfig starts an MCP server from cfg (tune may adjust it) for a test
// that builds its own surface and engine; ctx bounds its life.
func StartConfig(t testing.TB, ctx context.Context, cfg mcpserver.Config, tune ...func(*mcpserver.Config)) *MCP {
	t.Helper()
	for _, f := range tune {
		f(&cfg)
	}
	srv, err := mcpserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, err := srv.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return &MCP{Server: srv, URL: url, Secret: srv.DefaultToken().Secret}
}

// Connect opens an MCP Go SDK client session as clientName with the
// default token; version picks the protocol ("" for the SDK's own). The
// session closes at t's cleanup.
func (m *MCP) Connect(t testing.TB, version, clientName string) *mcp.ClientSession {
	t.Helper()
	return stacktest.Connect(t, m.URL, m.Secret, version, clientName)
}
