package sshconsole

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	gossh "golang.org/x/crypto/ssh"
)

// HostKeyFile is the host key's file name under the data directory.
const HostKeyFile = "ssh_host_ed25519"

// DefaultHostKeyPath is $XDG_DATA_HOME/tabwarden/ssh_host_ed25519 (or
// ~/.local/share/tabwarden/…), never the working directory. It is "" when
// no home directory is known either.
func DefaultHostKeyPath() string {
	base := os.Getenv("XDG_DATA_HOME")
	if !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "tabwarden", HostKeyFile)
}

// CheckHostKey reports a problem with an existing host key file: readable
// by others, not a regular file, or not a private key. A missing file is
// no problem (it is made on first use).
func CheckHostKey(path string) (exists bool, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() {
		return true, fmt.Errorf("host key %s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return true, fmt.Errorf("host key %s has mode %04o; it must be readable by you only (chmod 600 %s)", path, fi.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return true, err
	}
	if _, err := gossh.ParsePrivateKey(data); err != nil {
		return true, fmt.Errorf("host key %s: %v", path, err)
	}
	return true, nil
}

// loadOrCreateHostKey returns the PEM of the host key at path, creating an
// ed25519 key (0600, in a 0700 directory) on first use.
func loadOrCreateHostKey(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("no host key path: set XDG_DATA_HOME or HOME")
	}
	exists, err := CheckHostKey(path)
	if err != nil {
		return nil, err
	}
	if exists {
		return os.ReadFile(path)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := gossh.MarshalPrivateKey(priv, "tabwarden host key")
	if err != nil {
		return nil, err
	}
	data := pem.EncodeToMemory(block)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another console made it meanwhile.
		return os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("create host key: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return data, nil
}

// HostKeyFingerprint is the SHA256 fingerprint of the host key at path, as
// ssh shows it when it asks an operator to trust the console on first
// connect ("SHA256:…").
func HostKeyFingerprint(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	signer, err := gossh.ParsePrivateKey(data)
	if err != nil {
		return "", fmt.Errorf("host key %s: %v", path, err)
	}
	return gossh.FingerprintSHA256(signer.PublicKey()), nil
}
