package mcpserver

import (
	"errors"
	"strconv"
)

// MintNamed mints a token with the next free name agent-2, agent-3, … (the
// default token is agent number one). The console mints with MintFree
// (one name per host); tests use this to mint a second agent.
func (s *Server) MintNamed() (name, configLine string, err error) {
	for n := 2; ; n++ {
		name := "agent-" + strconv.Itoa(n)
		s.mu.Lock()
		taken := s.tokens.byName[name] != nil
		s.mu.Unlock()
		if taken {
			continue
		}
		t, err := s.MintToken(name)
		if err == nil {
			return t.Name, t.ConfigLine, nil
		}
		if !errors.Is(err, ErrTokenExists) {
			return "", "", err
		}
		// Minted concurrently by someone else: try the next name.
	}
}
