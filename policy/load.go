package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxOrigins is the most browserOrigins entries one file may list.
const MaxOrigins = 100

// MsgTooManyOrigins is the operator-facing text for a list over MaxOrigins.
const MsgTooManyOrigins = "A policy can list at most 100 browser origins."

// Consent profiles, from strictest to most permissive (design.md §4).
const (
	ProfileStrict  = "strict"
	ProfileThread  = "thread"
	ProfileTrusted = "trusted"
)

var profileRank = map[string]int{ProfileStrict: 0, ProfileThread: 1, ProfileTrusted: 2}

// Problem is one reason a policy file was rejected.
type Problem struct {
	File    string // the path as given
	Where   string // key path or entry, e.g. `browserOrigins[2] "https://a.example/x"`; "" for the whole file
	Message string
}

func (p Problem) String() string {
	if p.Where == "" {
		return p.File + ": " + p.Message
	}
	return p.File + ": " + p.Where + ": " + p.Message
}

// ValidationError lists every problem found across the files checked, so an
// operator fixes them in one pass rather than one per run.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// CheckFiles loads, validates and merges the policy files at paths. No paths
// means no managed policy: (nil, nil). Any problem in any file fails the whole
// set with a *ValidationError listing all of them, because running with part
// of an organization's policy would be running with a weaker one.
func CheckFiles(paths []string) (*Policy, error) {
	var all []Problem
	var ps []*Policy
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			all = append(all, Problem{File: path, Message: "Cannot read: " + err.Error()})
			continue
		}
		p, err := Parse(path, data)
		var ve *ValidationError
		if errors.As(err, &ve) {
			all = append(all, ve.Problems...)
			continue
		}
		ps = append(ps, p)
	}
	if len(all) > 0 {
		return nil, &ValidationError{Problems: all}
	}
	return Merge(ps...), nil
}

// Parse validates one policy file's content. name is used in problems and as
// the policy's source; its extension picks the format (.json, .yaml, .yml),
// otherwise the content is sniffed. Errors are *ValidationError.
func Parse(name string, data []byte) (*Policy, error) {
	l := &loader{file: name}
	p := l.parse(data)
	if len(l.problems) > 0 {
		return nil, &ValidationError{Problems: l.problems}
	}
	return p, nil
}

type loader struct {
	file     string
	problems []Problem
}

func (l *loader) add(where, msg string) {
	l.problems = append(l.problems, Problem{File: l.file, Where: where, Message: msg})
}

// key reports a problem with a value inside execution, named by its full
// path as the unknown- and duplicate-key problems name theirs.
func (l *loader) key(where, msg string) { l.add("execution."+where, msg) }

func (l *loader) parse(data []byte) *Policy {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if isJSON(l.file, data) && !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
			l.add("", fmt.Sprintf("Not valid JSON: line %d: %s", line, se.Error()))
		} else {
			l.add("", "Not valid JSON: "+err.Error())
		}
		return nil
	}
	// YAML 1.2 is a superset of JSON, so one walker over yaml nodes checks
	// both formats with the same messages.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			l.add("", "The file is empty.")
		} else {
			l.add("", "Not valid YAML: "+strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		l.add("", "More than one YAML document.")
		return nil
	}
	p := &Policy{Sources: []string{l.file}}
	root := deref(&doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = deref(root.Content[0])
	}
	l.object(root, "", "execution", func(key string, v *yaml.Node) bool {
		if _, ok := lookupExecutionKey(key); ok {
			// The commonest slip: the setting written at the top level.
			l.add(key, "Belongs under execution: write it as execution."+key+" (the file's keys: docs/policy.md).")
			return true
		}
		if key != "execution" {
			return false
		}
		l.execution(v, p)
		return true
	})
	return p
}

func isJSON(name string, data []byte) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		return true
	case ".yaml", ".yml":
		return false
	}
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// object walks a mapping, reporting non-mappings and unknown or duplicate
// keys; field handles a key and reports whether it knows it.
func (l *loader) object(n *yaml.Node, path string, known string, field func(key string, v *yaml.Node) bool) {
	if n.Kind != yaml.MappingNode {
		where := path
		if where == "" {
			where = "top level"
		}
		l.add(where, "Must be an object.")
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i].Value
		full := key
		if path != "" {
			full = path + "." + key
		}
		if seen[key] {
			l.add(full, "Duplicate key.")
			continue
		}
		seen[key] = true
		if !field(key, deref(n.Content[i+1])) {
			l.add(full, "Unknown key (known: "+known+").")
		}
	}
}

// executionKey is one key of the "execution" object: its name and how its
// value is read into a Policy. The table below is the policy schema: a key
// it lacks is an unknown key, the unknown-key message lists its names, and
// docs/policy.md documents each entry (TestPolicyDocCoversEveryKey), so a
// new key is one entry here, its reader and its section in the doc.
type executionKey struct {
	name string
	read func(l *loader, v *yaml.Node, p *Policy)
}

var executionKeys = []executionKey{
	{"browserOrigins", func(l *loader, v *yaml.Node, p *Policy) { p.Origins = l.origins(v) }},
	{"blockBrowserUploads", (*loader).blockUploads},
	{"consentFloor", (*loader).consentFloor},
	{"maxGrantMinutes", (*loader).maxGrantMinutes},
	{"grantable", func(l *loader, v *yaml.Node, p *Policy) { p.Grantable = l.grantable(v) }},
}

func (l *loader) execution(n *yaml.Node, p *Policy) {
	names := make([]string, len(executionKeys))
	for i, k := range executionKeys {
		names[i] = k.name
	}
	l.object(n, "execution", strings.Join(names, ", "), func(key string, v *yaml.Node) bool {
		k, ok := lookupExecutionKey(key)
		if ok {
			k.read(l, v, p)
		}
		return ok
	})
}

// lookupExecutionKey returns the table's entry for name.
func lookupExecutionKey(name string) (executionKey, bool) {
	for _, k := range executionKeys {
		if k.name == name {
			return k, true
		}
	}
	return executionKey{}, false
}

func (l *loader) blockUploads(v *yaml.Node, p *Policy) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" {
		l.key("blockBrowserUploads", "Use true or false.")
		return
	}
	if err := v.Decode(&p.BlockUploads); err != nil {
		l.key("blockBrowserUploads", "Use true or false.")
	}
}

func (l *loader) consentFloor(v *yaml.Node, p *Policy) {
	if _, ok := profileRank[v.Value]; !ok || v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		l.key(fmt.Sprintf("consentFloor %q", v.Value), "Use strict, thread, or trusted.")
		return
	}
	p.ConsentFloor = v.Value
}

// origins returns the normalized, sorted, de-duplicated entries; never nil,
// because a present list, even an empty one, restricts.
func (l *loader) origins(n *yaml.Node) []string {
	out := []string{}
	if n.Kind != yaml.SequenceNode {
		l.key("browserOrigins", "Use a list of sites; [] allows no website.")
		return out
	}
	if len(n.Content) > MaxOrigins {
		l.key("browserOrigins", MsgTooManyOrigins)
	}
	for i, e := range n.Content {
		e = deref(e)
		o, err := NormalizeOrigin(e.Value)
		if e.Kind != yaml.ScalarNode || e.ShortTag() != "!!str" || err != nil {
			l.key(fmt.Sprintf("browserOrigins[%d] %q", i, e.Value), MsgInvalidOrigin)
			continue
		}
		out = append(out, o)
	}
	return sortedSet(out)
}

// deref follows YAML aliases so an anchored value checks like a literal one.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}
