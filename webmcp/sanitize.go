package webmcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/internal/sitetext"
	"github.com/tabwarden/tabwarden/policy"
)

// Limits of design.md §7. They bound what a site can make the host parse,
// hold, show and send to a model.
const (
	MaxNameLen        = 128
	MaxDescriptionLen = 4096 // runes, after control characters are stripped
	MaxTitleLen       = 256  // runes, after control characters are stripped
	MaxSchemaBytes    = 64 << 10
	MaxSchemaDepth    = 32 // nesting of JSON arrays and objects; the root object is depth 1
	MaxSchemaNodes    = 5000
	// MaxSchemaRefs is ours, not design.md's: the validator's resolve step costs
	// tens of microseconds per $ref across the whole tree, so an unbounded
	// count lets one 64 KiB schema take most of a second (see
	// BenchmarkSanitize64KiB); 100 is far above what real tools use.
	MaxSchemaRefs    = 100
	MaxToolsPerFrame = 32
	MaxToolsPerTab   = 128
)

// Annotations are the site's hints. They are advisory: no gate is ever
// skipped because of them (design.md §4).
type Annotations struct {
	ReadOnlyHint     bool `json:"readOnlyHint,omitempty"`
	UntrustedContent bool `json:"untrustedContentHint,omitempty"`
	Consequential    bool `json:"consequentialHint,omitempty"`
}

// Descriptor is a tool as a frame registered it, before any check. Every
// field is site-controlled.
type Descriptor struct {
	Name        string
	Title       string
	Description string
	// InputSchema is the raw JSON the site gave; nil or empty means no
	// schema (the tool takes an empty object).
	InputSchema json.RawMessage
	Annotations Annotations
	// Origin is the origin of the registering frame's document, as the
	// browser reports it; Frame is the CDP frame id.
	Origin string
	Frame  string
}

// Tool is a descriptor that passed every check. Its strings are clean and
// bounded and InputSchema is the canonical re-serialization that is listed,
// validated against and digested — never the site's original bytes.
type Tool struct {
	Name        string
	Title       string
	Description string
	InputSchema json.RawMessage
	Annotations Annotations
	Origin      string
	Frame       string
	// Digest is the sha256 of everything above but Frame; a handle minted
	// for one digest goes stale when the site re-registers the name with
	// another descriptor.
	Digest string

	resolved *jsonschema.Resolved
}

// Rejected is one rejectedTools entry (design.md §7). Name is nil when the
// site's name is itself invalid: an unchecked name is site content the
// operator and the model should not be shown as if it were a tool name.
type Rejected struct {
	Name   *string      `json:"name"`
	Origin string       `json:"origin"`
	Code   errcode.Code `json:"code"`
	Error  string       `json:"error"`
}

// ValidName reports whether s matches ^[A-Za-z0-9_.-]{1,128}$. A hand loop:
// the pattern is ours, but nothing here compiles a regular expression at all.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// cleanText drops control characters (C0, DEL, C1, and the format
// characters that reorder or hide text) and invalid UTF-8. Newlines and tabs
// are kept as a space so a description still reads as prose.
func cleanText(s string) string { return strings.TrimSpace(sitetext.Line(s)) }

// CheckOrigin accepts https origins and plain http only on loopback hosts
// (localhost, 127.0.0.0/8, ::1). It returns the normalized origin.
func CheckOrigin(origin string) (string, error) {
	o, err := policy.NormalizeOrigin(origin)
	if err != nil {
		return "", fmt.Errorf("frame origin %q is not an http(s) origin", truncate(origin, 200))
	}
	if strings.HasPrefix(o, "https://") {
		return o, nil
	}
	u, err := url.Parse(o)
	if err != nil {
		return "", fmt.Errorf("frame origin %q is not an http(s) origin", truncate(origin, 200))
	}
	if isLoopback(u.Hostname()) {
		return o, nil
	}
	return "", fmt.Errorf("plain-http origin %s is only allowed on loopback", o)
}

func isLoopback(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Sanitize checks one descriptor against every rule of design.md §7 that does
// not depend on its neighbours (quotas and duplicates are SanitizeAll's).
// Exactly one of the results is non-nil.
func Sanitize(d Descriptor) (*Tool, *Rejected) {
	rej := func(name *string, origin string, code errcode.Code, format string, args ...any) (*Tool, *Rejected) {
		return nil, &Rejected{Name: name, Origin: origin, Code: code, Error: fmt.Sprintf(format, args...)}
	}
	rawOrigin := truncate(cleanText(d.Origin), 300)
	if !ValidName(d.Name) {
		return rej(nil, rawOrigin, errcode.InvalidSiteTool,
			"tool name must match ^[A-Za-z0-9_.-]{1,128}$ (got %d bytes)", len(d.Name))
	}
	name := d.Name
	origin, err := CheckOrigin(d.Origin)
	if err != nil {
		return rej(&name, rawOrigin, errcode.InvalidSiteTool, "%v", err)
	}
	desc := cleanText(d.Description)
	if desc == "" {
		return rej(&name, origin, errcode.InvalidSiteTool, "description is required")
	}
	if n := utf8.RuneCountInString(desc); n > MaxDescriptionLen {
		return rej(&name, origin, errcode.InvalidSiteTool, "description has %d characters, limit %d", n, MaxDescriptionLen)
	}
	title := cleanText(d.Title)
	if n := utf8.RuneCountInString(title); n > MaxTitleLen {
		return rej(&name, origin, errcode.InvalidSiteTool, "title has %d characters, limit %d", n, MaxTitleLen)
	}
	schema, resolved, err := SanitizeSchema(d.InputSchema)
	if err != nil {
		return rej(&name, origin, errcode.UnsupportedSchema, "%s", truncate(cleanText(err.Error()), 400))
	}
	t := &Tool{
		Name: name, Title: title, Description: desc, InputSchema: schema,
		Annotations: d.Annotations, Origin: origin, Frame: d.Frame, resolved: resolved,
	}
	t.Digest = digestTool(t)
	return t, nil
}

func digestTool(t *Tool) string {
	h := sha256.New()
	for _, s := range []string{t.Name, t.Title, t.Description, string(t.InputSchema), t.Origin,
		fmt.Sprint(t.Annotations.ReadOnlyHint, t.Annotations.UntrustedContent, t.Annotations.Consequential)} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// MaxExaminedPerFrame and MaxExaminedPerTab bound the registrations one
// listing looks at. They are ours, not design.md's: every rejected tool is one
// rejectedTools entry, so without them a page could make a listing (and
// the agent's context) as large as it likes. Past a bound, one entry
// stands for the rest. Frames are examined in document order (top first),
// so a frame's junk can hide only its own later registrations, and a
// tab's only once 1024 registrations were looked at.
const (
	MaxExaminedPerFrame = 8 * MaxToolsPerFrame
	MaxExaminedPerTab   = 1024
)

// SanitizeAll checks a tab's descriptors in registration order and applies
// the quotas: the first MaxToolsPerFrame valid tools of a frame and the
// first MaxToolsPerTab of the tab are kept, the excess is rejected one entry
// per tool. A name registered twice in one frame keeps its first valid
// registration. Invalid tools never count against a quota, so a flood of
// junk cannot push a valid tool out. A descriptor that can no longer fit a
// quota is rejected without parsing its schema, which bounds the work a
// page can cause to MaxToolsPerTab full checks plus the failures before
// them.
func SanitizeAll(ds []Descriptor) ([]*Tool, []Rejected) {
	var tools []*Tool
	var rejected []Rejected
	perFrame := map[string]int{}
	examined := map[string]int{}
	skipped := map[string]int{}
	var skippedOrder []Descriptor
	seen := map[[2]string]bool{}
	total := 0
	for i, d := range ds {
		if total == MaxExaminedPerTab {
			rejected = append(rejected, Rejected{Origin: truncate(cleanText(d.Origin), 300), Code: errcode.InvalidSiteTool,
				Error: fmt.Sprintf("%d more registrations were not examined (at most %d per tab)", len(ds)-i, MaxExaminedPerTab)})
			break
		}
		if examined[d.Frame] >= MaxExaminedPerFrame {
			if skipped[d.Frame] == 0 {
				skippedOrder = append(skippedOrder, d)
			}
			skipped[d.Frame]++
			continue
		}
		examined[d.Frame]++
		total++
		quota := ""
		switch {
		case perFrame[d.Frame] >= MaxToolsPerFrame:
			quota = fmt.Sprintf("frame registered more than %d tools", MaxToolsPerFrame)
		case len(tools) >= MaxToolsPerTab:
			quota = fmt.Sprintf("tab registered more than %d tools", MaxToolsPerTab)
		}
		if quota != "" {
			r := Rejected{Origin: truncate(cleanText(d.Origin), 300), Code: errcode.InvalidSiteTool, Error: quota}
			if ValidName(d.Name) {
				name := d.Name
				r.Name = &name
				if o, err := CheckOrigin(d.Origin); err == nil {
					r.Origin = o
				}
			}
			rejected = append(rejected, r)
			continue
		}
		t, r := Sanitize(d)
		if r != nil {
			rejected = append(rejected, *r)
			continue
		}
		name := t.Name
		key := [2]string{t.Frame, t.Name}
		if seen[key] {
			rejected = append(rejected, Rejected{Name: &name, Origin: t.Origin, Code: errcode.InvalidSiteTool,
				Error: "a tool with this name is already registered in this frame"})
			continue
		}
		seen[key] = true
		perFrame[t.Frame]++
		tools = append(tools, t)
	}
	for _, d := range skippedOrder {
		rejected = append(rejected, Rejected{Origin: truncate(cleanText(d.Origin), 300), Code: errcode.InvalidSiteTool,
			Error: fmt.Sprintf("%d more registrations of a frame were not examined (at most %d per frame)", skipped[d.Frame], MaxExaminedPerFrame)})
	}
	return tools, rejected
}

// emptySchema is what a tool without a schema accepts: an object.
var emptySchema = json.RawMessage(`{"type":"object"}`)

// SanitizeSchema checks a site's input schema against the subset of
// design.md §7 and returns its canonical form and the resolved validator.
//
// Order matters: size first (bounds all later work), then a structural walk
// over the raw JSON that rejects forbidden keywords in schema position and
// checks depth, node count and $ref targets, then — only for a schema that
// passed — jsonschema-go parses and resolves the canonical bytes, and a
// second walk over the typed result confirms no regex or format reached
// the validator. Resolve compiles "pattern" regexes; the walks guarantee
// it never sees one.
func SanitizeSchema(raw json.RawMessage) (json.RawMessage, *jsonschema.Resolved, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = emptySchema
	}
	if len(raw) > MaxSchemaBytes {
		return nil, nil, fmt.Errorf("schema is %d bytes, limit %d", len(raw), MaxSchemaBytes)
	}
	// Depth and node count first, on the token stream, so a deep document
	// never becomes a deep Go value.
	if err := checkShape(raw); err != nil {
		return nil, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, fmt.Errorf("schema is not JSON: %v", err)
	}
	if dec.More() {
		return nil, nil, fmt.Errorf("schema has trailing data")
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("schema must be a JSON object")
	}
	if t, ok := root["type"]; ok && t != "object" {
		return nil, nil, fmt.Errorf(`schema "type" must be "object"`)
	}
	w := walker{root: root}
	if err := w.schema(root, "#", true); err != nil {
		return nil, nil, err
	}
	canon, err := json.Marshal(root)
	if err != nil {
		return nil, nil, fmt.Errorf("schema cannot be re-serialized: %v", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(canon, &s); err != nil {
		return nil, nil, fmt.Errorf("schema is not a JSON Schema: %v", err)
	}
	if err := typedCheck(&s, 0); err != nil {
		return nil, nil, err
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("schema does not resolve: %v", err)
	}
	return canon, rs, nil
}

// checkShape bounds nesting depth and node count over every JSON value of
// the document (keywords' values and data alike; object keys are not
// nodes).
func checkShape(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	// Per open container: is it an object, and is its next token a key.
	type level struct{ object, wantKey bool }
	var stack []level
	nodes := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("schema is not JSON: %v", err)
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].wantKey = true
			}
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			stack[n-1].wantKey = false
			continue
		}
		nodes++
		if nodes > MaxSchemaNodes {
			return fmt.Errorf("schema has more than %d nodes", MaxSchemaNodes)
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, level{object: d == '{', wantKey: d == '{'})
			if len(stack) > MaxSchemaDepth {
				return fmt.Errorf("schema nests deeper than %d", MaxSchemaDepth)
			}
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
}
