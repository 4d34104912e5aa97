package audit

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSummarize(t *testing.T) {
	type typed struct {
		Name  string `json:"name"`
		Token string `json:"token"`
	}
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"nil is no input", nil, ""},
		{"empty raw is no input", json.RawMessage("  "), ""},
		{"brief example", map[string]any{
			"title": "hello world!", "count": 3, "tags": []any{"a", "b", "c"}, "password": "hunter2",
		}, "{count: number, password: [redacted], tags: array(3), title: string(12)}"},
		{"raw JSON", json.RawMessage(`{"b":true,"a":null,"n":1e400,"s":"héllo"}`),
			"{a: null, b: boolean, n: number, s: string(5)}"},
		{"bytes of JSON", []byte(`[{"id":1},{"id":2}]`), "array(2) of {id: number}"},
		{"scalar", "abc", "string(3)"},
		{"invalid JSON", []byte(`{"a":`), "invalid JSON (5 bytes)"},
		{"trailing data is invalid", []byte(`{} {}`), "invalid JSON (5 bytes)"},
		{"typed Go value", typed{Name: "x", Token: "y"}, "{name: string(1), token: [redacted]}"},
		{"map of strings", map[string]string{"k": "vv"}, "{k: string(2)}"},
		{"redacted object is not descended", map[string]any{"Authorization": map[string]any{"bearer": "x"}},
			"{Authorization: [redacted]}"},
		{"odd keys are quoted and escaped", map[string]any{"a b": 1, "x\x1b[2Jy": 2, "\u202eevil": 3},
			`{"a b": number, "x\x1b[2Jy": number, "\u202eevil": number}`},
		{"depth bound", map[string]any{"a": map[string]any{"b": map[string]any{"c": map[string]any{"d": map[string]any{"e": 1, "f": 2}}}}},
			"{a: {b: {c: {d: object(2)}}}}"},
		{"empty containers", map[string]any{"o": map[string]any{}, "a": []any{}}, "{a: array(0), o: {}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.in); got != tc.want {
				t.Errorf("Summarize = %q\n          want %q", got, tc.want)
			}
		})
	}
}

func TestSummarizeLongKeyIsCut(t *testing.T) {
	k := strings.Repeat("k", 100)
	got := Summarize(map[string]any{k: 1})
	if strings.Contains(got, strings.Repeat("k", keyRunes+1)) || !strings.Contains(got, `…"`) {
		t.Fatalf("long key not cut: %s", got)
	}
}

func TestSummarizeLengthBound(t *testing.T) {
	m := map[string]any{}
	for i := range 200 {
		m[strings.Repeat("é", 3)+string(rune('a'+i%26))+strings.Repeat("z", i%7)] = "v"
	}
	got := Summarize(m)
	if n := utf8.RuneCountInString(got); n != summaryRunes {
		t.Fatalf("summary has %d runes, want exactly %d when cut", n, summaryRunes)
	}
	if !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Fatalf("cut summary must end in … and stay valid UTF-8: %q", got)
	}
}

func TestRedactKey(t *testing.T) {
	for _, k := range []string{
		"authorization", "Authorization", "Set-Cookie", "cookies", "credentials", "PASSWORD",
		"newPassword", "client_secret", "access_token", "Token", "apiKey", "api_key", "x-api-key",
		"APIKEY", "api.key",
	} {
		if !RedactKey(k) {
			t.Errorf("RedactKey(%q) = false", k)
		}
	}
	for _, k := range []string{"title", "count", "pass", "api", "key", "keyboard", "author"} {
		if RedactKey(k) {
			t.Errorf("RedactKey(%q) = true", k)
		}
	}
}

func TestDigest(t *testing.T) {
	size, sum := Digest([]byte("abc"))
	if size != 3 || sum != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("Digest(abc) = %d %s", size, sum)
	}
	if size, _ := Digest(nil); size != 0 {
		t.Fatalf("Digest(nil) size %d", size)
	}
}

const canary = "CANARY-7f3a"

func TestSummarizeNeverLeaksValues(t *testing.T) {
	input := map[string]any{
		"title":    canary,
		"password": canary,
		"api-key":  []any{canary},
		"profile": map[string]any{
			"name":   canary + " the second",
			"secret": map[string]any{"inner": canary},
			"list":   []any{map[string]any{"note": canary, "cookie": canary}},
			"deep":   map[string]any{"deeper": map[string]any{"deepest": map[string]any{"x": canary}}},
		},
		"numbers": []any{7.5, canary},
	}
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]any{"map": input, "raw": json.RawMessage(raw), "bytes": raw} {
		got := Summarize(in)
		if strings.Contains(got, canary) || strings.Contains(got, "CANARY") || strings.Contains(got, "7f3a") {
			t.Errorf("%s: summary leaks a value: %s", name, got)
		}
		if !strings.Contains(got, "password: [redacted]") || !strings.Contains(got, "title: string(11)") {
			t.Errorf("%s: summary lost its shape: %s", name, got)
		}
	}
	// A number must not leak either.
	if got := Summarize(map[string]any{"pin": 48213}); strings.Contains(got, "48213") {
		t.Errorf("number leaked: %s", got)
	}
}

// scrub replaces every string value (not key) with one of the same length
// and every number and boolean with a fixed one: the shape stays, every
// value changes.
func scrub(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = scrub(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = scrub(e)
		}
		return out
	case string:
		return strings.Repeat("\x00", utf8.RuneCountInString(v))
	case json.Number:
		return json.Number("0")
	case bool:
		return false
	}
	return v
}

const valueMark = '\uE000'

// mark wraps every string value (not key) in valueMark.
func mark(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = mark(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = mark(e)
		}
		return out
	case string:
		return string(valueMark) + v + string(valueMark)
	}
	return v
}

// reencode gives v back as JSON bytes, so it takes the same path as the
// fuzzer's input (top-level null included).
func reencode(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzSummarize(f *testing.F) {
	for _, s := range []string{
		`{"title":"hello world","count":3,"tags":["a","b"],"password":"hunter22"}`,
		`[{"a":{"b":{"c":{"d":{"e":"deep value"}}}}}]`,
		`{"x\u001b":"secretvalue","token":{"t":"abcdefgh"}}`,
		`"just a string"`, `12345678901234567890`, `null`, `{"a":`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := Summarize(b)
		if utf8.RuneCountInString(got) > summaryRunes {
			t.Fatalf("summary over bound: %d runes", utf8.RuneCountInString(got))
		}
		v, err := decodeJSON(b)
		if err != nil {
			return
		}
		// The summary is a function of shape and keys only.
		if shape := Summarize(reencode(t, scrub(v))); shape != got {
			t.Fatalf("summary depends on values:\n raw   %q\n scrub %q", got, shape)
		}
		// Independently: mark every string value with a private-use rune,
		// which a key can only show escaped; the mark must never surface.
		if marked := Summarize(reencode(t, mark(v))); strings.ContainsRune(marked, valueMark) {
			t.Fatalf("summary %q shows a string value", marked)
		}
	})
}

func TestMaskSecrets(t *testing.T) {
	got := MaskSecrets([]byte(`{"title":"Weekly","nested":{"apiKey":"sk-1","list":[{"Password":"hunter2","n":3}]},"authorization":{"deep":"x"}}`))
	want := `{
  "authorization": "•••",
  "nested": {
    "apiKey": "•••",
    "list": [
      {
        "Password": "•••",
        "n": 3
      }
    ]
  },
  "title": "Weekly"
}`
	if got != want {
		t.Fatalf("MaskSecrets:\n%s\nwant:\n%s", got, want)
	}
	for _, secret := range []string{"sk-1", "hunter2", `"x"`} {
		if strings.Contains(got, secret) {
			t.Errorf("a secret value %s survived", secret)
		}
	}
	if MaskSecrets([]byte("not json")) != "" || MaskSecrets(nil) != "" {
		t.Error("non-JSON input must give nothing to show")
	}
}
