package sshconsole

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	gossh "golang.org/x/crypto/ssh"

	"github.com/tabwarden/tabwarden/consent"
)

// ErrNoKeysFile is returned when the SSH console is asked for without an
// authorized keys file: it never serves without one.
var ErrNoKeysFile = errors.New("--ssh-listen needs --ssh-authorized-keys FILE: operators sign in with public keys only, each key's comment naming its operator")

// nameRE is what an operator's name (a key's comment) may be: it is shown
// on every screen and written to the audit log, so nothing a terminal
// could interpret.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$`)

// Keys is a parsed authorized keys file: each key names its operator.
type Keys struct {
	byKey map[string]consent.Operator // key.Marshal() → operator
	names []string
}

// Len is the number of keys.
func (k *Keys) Len() int { return len(k.byKey) }

// Names lists the operators, in file order, once each.
func (k *Keys) Names() []string { return append([]string(nil), k.names...) }

// Lookup returns the operator of a verified key.
func (k *Keys) Lookup(key gossh.PublicKey) (consent.Operator, bool) {
	if k == nil || key == nil {
		return consent.Operator{}, false
	}
	op, ok := k.byKey[string(key.Marshal())]
	return op, ok
}

// LoadKeys reads an authorized keys file (OpenSSH format, one
// `TYPE BASE64 NAME` per line; blank lines and # comments skipped). Every
// key must carry a comment, which is its operator's name; options
// (command=, from=, …) are refused rather than silently not enforced; a key
// listed twice under two names is refused. Several keys may share a name.
func LoadKeys(path string) (*Keys, error) {
	if path == "" {
		return nil, ErrNoKeysFile
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("authorized keys: %w", err)
	}
	return ParseKeys(data)
}

// ParseKeys parses the contents of an authorized keys file (see LoadKeys).
func ParseKeys(data []byte) (*Keys, error) {
	k := &Keys{byKey: map[string]consent.Operator{}}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	var problems []string
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, comment, opts, _, err := gossh.ParseAuthorizedKey([]byte(line))
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("line %d: not a public key", n))
			continue
		case len(opts) > 0:
			problems = append(problems, fmt.Sprintf("line %d: key options (%s) are not supported; list the bare key", n, strings.Join(opts, ",")))
			continue
		case comment == "":
			problems = append(problems, fmt.Sprintf("line %d: the key has no comment; the comment is the operator's name", n))
			continue
		case !nameRE.MatchString(comment):
			problems = append(problems, fmt.Sprintf("line %d: operator name %q: use letters, digits and . _ @ + - only", n, comment))
			continue
		}
		id := string(key.Marshal())
		if prev, ok := k.byKey[id]; ok {
			if prev.Name != comment {
				problems = append(problems, fmt.Sprintf("line %d: the same key is already listed for %s", n, prev.Name))
			}
			continue
		}
		k.byKey[id] = consent.Operator{Name: comment, Fingerprint: gossh.FingerprintSHA256(key)}
		if !seen[comment] {
			seen[comment] = true
			k.names = append(k.names, comment)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("authorized keys: %w", err)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("authorized keys: %s", strings.Join(problems, "; "))
	}
	if len(k.byKey) == 0 {
		return nil, errors.New("authorized keys: no keys in the file")
	}
	return k, nil
}
