package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/consent"
)

// InMemory is one in-process agent's connection to the server (design.md §12):
// an MCP client session over an in-memory transport, under a token of its
// own that has no secret, so nothing outside the process can use it. Its
// calls take the same tool handler as an HTTP agent's, so every gate, the
// audit and take-over apply to it alike.
type InMemory struct {
	// Session is the client side: list tools and call them here.
	Session *mcp.ClientSession

	srv     *Server
	tokenID string
	server  *mcp.ServerSession
	once    sync.Once
}

// inMemoryTokens maps an in-memory server session to its token id, for
// conversationFor: the in-memory transport carries no HTTP request, so no
// bearer token rides in the request's Extra.
var inMemoryTokens sync.Map // *mcp.ServerSession → token id

// inMemoryTokenID is the token of a call that came over an in-memory
// connection, "" otherwise.
func inMemoryTokenID(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	if id, ok := inMemoryTokens.Load(ss); ok {
		return id.(string)
	}
	return ""
}

// ConnectInMemory connects an in-process agent as its own conversation. name
// is the token's name (tokenNameRE; unique among live tokens) and client the
// MCP client name shown beside it. The conversation starts at its first tool
// call, like an HTTP agent's; it ends when Close is called, the token is
// revoked, or the server closes.
func (s *Server) ConnectInMemory(ctx context.Context, name, client string) (*InMemory, error) {
	if !tokenNameRE.MatchString(name) {
		return nil, ErrTokenName
	}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nil, ErrClosed
	case s.tokens.byName[name] != nil:
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrTokenExists, name)
	}
	s.tokens.seq++
	t := &token{id: "t" + strconv.Itoa(s.tokens.seq), name: name}
	s.tokens.byName[name] = t
	s.tokens.byID[t.id] = t
	s.mu.Unlock()

	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.mcp.Connect(ctx, st, nil)
	if err != nil {
		s.dropInMemoryToken(t.id, "connect failed")
		return nil, fmt.Errorf("mcpserver: in-memory connect: %w", err)
	}
	inMemoryTokens.Store(ss, t.id)
	c := mcp.NewClient(&mcp.Implementation{Name: client, Version: s.cfg.Version}, nil)
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		inMemoryTokens.Delete(ss)
		ss.Close()
		s.dropInMemoryToken(t.id, "connect failed")
		return nil, fmt.Errorf("mcpserver: in-memory connect: %w", err)
	}
	m := &InMemory{Session: cs, srv: s, tokenID: t.id, server: ss}
	s.watchers.Add(1)
	go func() {
		defer s.watchers.Done()
		_ = ss.Wait() // how it ended does not matter, only that it did
		m.end("the built-in agent's session ended")
	}()
	return m, nil
}

// Conversation is the engine's id of the connection's conversation, "" until
// its first tool call.
func (m *InMemory) Conversation() consent.ConversationID {
	m.srv.mu.Lock()
	defer m.srv.mu.Unlock()
	if c := m.srv.convs[convKey{tokenID: m.tokenID}]; c != nil {
		return c.id
	}
	return ""
}

// Close ends the connection and its conversation (ops cancelled, tabs to the
// operator). Idempotent.
func (m *InMemory) Close() error {
	m.end("the built-in agent stopped")
	err := m.Session.Close()
	if errors.Is(err, mcp.ErrConnectionClosed) {
		err = nil
	}
	return err
}

func (m *InMemory) end(why string) {
	m.once.Do(func() {
		m.server.Close()
		inMemoryTokens.Delete(m.server)
		m.srv.dropInMemoryToken(m.tokenID, why)
	})
}

// dropInMemoryToken forgets an in-memory token and ends its conversation.
func (s *Server) dropInMemoryToken(id, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tokens.byID[id]
	if t == nil {
		return // revoked by the operator, or the server closed
	}
	delete(s.tokens.byID, id)
	if s.tokens.byName[t.name] == t {
		delete(s.tokens.byName, t.name)
	}
	for _, c := range s.convs {
		if c.token == t {
			s.endConversationLocked(c, why)
		}
	}
}
