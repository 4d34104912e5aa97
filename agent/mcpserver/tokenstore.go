package mcpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Named agent tokens outlast the console (design.md §3): each is kept, as its
// SHA-256 only, in one file per user until it is revoked, so a host
// configured once keeps working after a restart. The file is the one truth
// shared by every console of the user and by `tabwarden tokens`: a console
// reads it at start, writes each mint and revocation through it, and
// re-reads it when it changes (another console minted, `tabwarden tokens
// revoke` ran), ending at once the conversations of a token that left it.
// The default token is not kept: it is minted at each start and lives in
// the endpoint file, for the relay.

// TokenFile is the token store's file name in the state directory.
const TokenFile = "tokens.json"

// StoredToken is one kept token: its name, the SHA-256 of its secret (hex)
// and when it was minted.
type StoredToken struct {
	Name    string    `json:"name"`
	SHA256  string    `json:"sha256"`
	Created time.Time `json:"created"`
}

type tokenFileData struct {
	Tokens []StoredToken `json:"tokens"`
}

// TokenStorePath is $XDG_STATE_HOME/tabwarden/tokens.json, else
// ~/.local/state/tabwarden/tokens.json.
func TokenStorePath() string { return filepath.Join(StateDir(), TokenFile) }

// StateDir is $XDG_STATE_HOME/tabwarden, else ~/.local/state/tabwarden (the
// XDG rule: a relative value is ignored).
func StateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "tabwarden")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".local", "state", "tabwarden")
}

// ReadTokens lists the tokens kept in path, sorted by name. A missing file
// is an empty list.
func ReadTokens(path string) ([]StoredToken, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f tokenFileData
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []StoredToken
	for _, t := range f.Tokens {
		if d, err := hex.DecodeString(t.SHA256); err != nil || len(d) != sha256.Size || !tokenNameRE.MatchString(t.Name) {
			return nil, fmt.Errorf("%s: a malformed entry %q", path, t.Name)
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b StoredToken) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// UpdateTokens rewrites path with fn's answer to its current list, under
// an exclusive lock on path+".lock" so two consoles and `tabwarden tokens`
// never lose each other's changes. The file is 0600 in a 0700 directory
// and is replaced atomically.
func UpdateTokens(path string, fn func([]StoredToken) ([]StoredToken, error)) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("token store: lock: %w", err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	cur, err := ReadTokens(path)
	if err != nil {
		return err
	}
	next, err := fn(cur)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(tokenFileData{Tokens: append([]StoredToken{}, next...)}, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tokens-*.json")
	if err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("token store: %w", err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("token store: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("token store: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	return nil
}

// RevokeStoredToken removes name from path. ErrUnknownToken when it is not
// there.
func RevokeStoredToken(path, name string) error {
	return UpdateTokens(path, func(cur []StoredToken) ([]StoredToken, error) {
		i := slices.IndexFunc(cur, func(t StoredToken) bool { return t.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("%w: %s", ErrUnknownToken, name)
		}
		return slices.Delete(cur, i, i+1), nil
	})
}

// storeStamp identifies one version of the store file, to re-read it only
// when it changed.
type storeStamp struct {
	mod  time.Time
	size int64
	ino  uint64
}

func stampOf(path string) storeStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return storeStamp{}
	}
	st := storeStamp{mod: fi.ModTime(), size: fi.Size()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st
}

// syncStore brings the table in line with the store file when the file
// changed since it was last read: tokens another process kept are added,
// and kept tokens that left the file are revoked here too, ending their
// conversations. Without a store it does nothing.
func (s *Server) syncStore() {
	path := s.cfg.TokenStore
	if path == "" {
		return
	}
	s.storeMu.Lock()
	defer s.storeMu.Unlock()
	stamp := stampOf(path)
	if stamp == s.storeStamp {
		return
	}
	kept, err := ReadTokens(path)
	if err != nil {
		// Keep what is known; say once per version of the file.
		s.log.Warn("token store unreadable", "err", err)
		s.storeStamp = stamp
		return
	}
	s.storeStamp = stamp
	inFile := make(map[string][sha256.Size]byte, len(kept))
	s.mu.Lock()
	for _, k := range kept {
		var d [sha256.Size]byte
		raw, _ := hex.DecodeString(k.SHA256) // ReadTokens checked it
		copy(d[:], raw)
		inFile[k.Name] = d
		if t := s.tokens.byName[k.Name]; t != nil || s.tokens.byDigest[d] != nil {
			continue
		}
		s.addTokenLocked(k.Name, d, true)
	}
	var gone []string
	for name, t := range s.tokens.byName {
		if d, ok := inFile[name]; t.stored && (!ok || s.tokens.byDigest[d] != t) {
			gone = append(gone, name)
		}
	}
	s.mu.Unlock()
	for _, name := range gone {
		_ = s.revokeLocal(name, "agent token "+name+" revoked (removed from the token store: tabwarden tokens revoke)", "")
	}
}

// watchStore re-reads the store every interval until stop closes, so a
// revocation made elsewhere ends its conversations (and withdraws their
// reviews) without waiting for the token's next request.
func (s *Server) watchStore(stop <-chan struct{}, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.syncStore()
		}
	}
}
