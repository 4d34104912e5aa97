package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of a summary. A summary is for a review panel and an audit line,
// not a schema dump: past these it says less rather than growing.
const (
	summaryDepth = 4   // objects nested deeper show as object(n)
	summaryRunes = 300 // longer summaries end in "…"
	keyRunes     = 40  // longer keys are cut and quoted
)

var secretKey = regexp.MustCompile(`(?i)authorization|cookie|credential|password|secret|token|api.?key`)

// RedactKey reports whether a value under key k must not even have its type
// shown (design.md §9: authorization|cookie|credential|password|secret|token|
// api.?key, case-insensitive, anywhere in the key).
func RedactKey(k string) bool { return secretKey.MatchString(k) }

// Digest is the size and hex sha256 of b, the only trace typed text,
// uploads and site-tool results leave in the log.
func Digest(b []byte) (size int64, sha256hex string) {
	sum := sha256.Sum256(b)
	return int64(len(b)), hex.EncodeToString(sum[:])
}

// Summarize describes the shape of a JSON-like value without any of its
// values: object keys (sorted) with the type of each value, strings as
// string(runes), numbers as number, booleans as boolean, arrays as
// array(n) — followed by " of " and the shape of the first element when
// that element is an object or array. Values under keys RedactKey matches
// show as [redacted], their type and contents unexamined. Objects deeper
// than 4 levels show as object(n); the whole summary is cut at 300
// characters with "…".
//
// input may be map[string]any, []any, string, bool, a Go number,
// json.Number, nil, json.RawMessage or []byte holding JSON, or anything
// encoding/json can marshal. nil or empty JSON gives "" (no input); bytes
// that are not JSON give "invalid JSON (n bytes)".
//
// The output depends only on the input's shape and keys: replacing every
// string value with another of the same length, or any number or boolean
// with another, never changes it (FuzzSummarize checks this).
func Summarize(input any) string {
	switch in := input.(type) {
	case nil:
		return ""
	case json.RawMessage:
		return summarizeJSON(in)
	case []byte:
		return summarizeJSON(in)
	}
	var s summarizer
	s.value(input, 0)
	return s.String()
}

func summarizeJSON(b []byte) string {
	if len(bytes.TrimSpace(b)) == 0 {
		return ""
	}
	v, err := decodeJSON(b)
	if err != nil {
		return fmt.Sprintf("invalid JSON (%d bytes)", len(b))
	}
	var s summarizer
	s.value(v, 0)
	return s.String()
}

// decodeJSON decodes exactly one JSON value, keeping numbers as
// json.Number so huge numbers do not fail the decode.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

type summarizer struct {
	b strings.Builder
}

// full reports that the summary is certainly past its bound (every rune
// is at most 4 bytes), so deeper work would only be cut away.
func (s *summarizer) full() bool { return s.b.Len() > 4*summaryRunes }

func (s *summarizer) String() string {
	out := s.b.String()
	if utf8.RuneCountInString(out) <= summaryRunes {
		return out
	}
	r := []rune(out)
	return string(r[:summaryRunes-1]) + "…"
}

func (s *summarizer) value(v any, depth int) {
	if s.full() {
		return
	}
	switch v := v.(type) {
	case nil:
		s.b.WriteString("null")
	case string:
		fmt.Fprintf(&s.b, "string(%d)", utf8.RuneCountInString(v))
	case bool:
		s.b.WriteString("boolean")
	case json.Number, float32, float64, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64, uintptr:
		s.b.WriteString("number")
	case map[string]any:
		s.object(v, depth)
	case []any:
		s.array(v, depth)
	case json.RawMessage:
		s.nested(v, depth)
	default:
		// Typed Go values (structs, map[string]string, …): summarize what
		// they would look like on the wire.
		b, err := json.Marshal(v)
		if err != nil {
			fmt.Fprintf(&s.b, "unsupported(%T)", v)
			return
		}
		s.nested(b, depth)
	}
}

func (s *summarizer) nested(b []byte, depth int) {
	v, err := decodeJSON(b)
	if err != nil {
		fmt.Fprintf(&s.b, "invalid JSON (%d bytes)", len(b))
		return
	}
	s.value(v, depth)
}

func (s *summarizer) object(m map[string]any, depth int) {
	if depth >= summaryDepth {
		fmt.Fprintf(&s.b, "object(%d)", len(m))
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	s.b.WriteByte('{')
	for i, k := range keys {
		if s.full() {
			return
		}
		if i > 0 {
			s.b.WriteString(", ")
		}
		s.b.WriteString(showKey(k))
		s.b.WriteString(": ")
		if RedactKey(k) {
			s.b.WriteString("[redacted]")
			continue
		}
		s.value(m[k], depth+1)
	}
	s.b.WriteByte('}')
}

func (s *summarizer) array(a []any, depth int) {
	fmt.Fprintf(&s.b, "array(%d)", len(a))
	if len(a) == 0 || depth+1 >= summaryDepth {
		return
	}
	switch a[0].(type) {
	case map[string]any, []any:
		s.b.WriteString(" of ")
		s.value(a[0], depth+1)
	}
}

// showKey prints a key as is when it is a plain identifier-like word, and
// quoted (escaping control, bidi and other invisible runes, which could
// otherwise rewrite a terminal line) and cut to keyRunes otherwise.
func showKey(k string) string {
	if k != "" && utf8.RuneCountInString(k) <= keyRunes && plainKey(k) {
		return k
	}
	if r := []rune(k); len(r) > keyRunes {
		k = string(r[:keyRunes]) + "…"
	}
	return strconv.Quote(k)
}

func plainKey(k string) bool {
	for _, r := range k {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("_-.$@/", r):
		default:
			return false
		}
	}
	return true
}

// MaskedSecret replaces, in MaskSecrets, every value under a key RedactKey
// matches.
const MaskedSecret = "•••"

// MaskSecrets is input (JSON) pretty-printed for the operator's review, with
// the value under every key RedactKey matches replaced by MaskedSecret at
// any depth. It is for the screen only: the log keeps Summarize's shape and
// digests, never values. Bytes that are not JSON give "".
func MaskSecrets(input []byte) string {
	if len(bytes.TrimSpace(input)) == 0 {
		return ""
	}
	v, err := decodeJSON(input)
	if err != nil {
		return ""
	}
	out, err := json.MarshalIndent(maskValue(v), "", "  ")
	if err != nil {
		return ""
	}
	return string(out)
}

func maskValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, val := range t {
			if RedactKey(k) {
				m[k] = MaskedSecret
				continue
			}
			m[k] = maskValue(val)
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = maskValue(val)
		}
		return out
	}
	return v
}
