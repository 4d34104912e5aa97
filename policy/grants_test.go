package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestGrantKeysParse(t *testing.T) {
	p, err := Parse("a.yaml", []byte("execution:\n  maxGrantMinutes: 10\n  grantable: [click, read, site_tool:save_draft, click]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxGrantMinutes != 10 || !slices.Equal(p.Grantable, []string{"click", "read", "site_tool:save_draft"}) {
		t.Fatalf("got %d %v", p.MaxGrantMinutes, p.Grantable)
	}
	off, err := Parse("b.json", []byte(`{"execution":{"grantable":[]}}`))
	if err != nil || off.Grantable == nil || len(off.Grantable) != 0 {
		t.Fatalf("grantable: [] gave %#v, %v", off.Grantable, err)
	}
	if !strings.Contains(off.Format(), "Scoped grants (s): off") || off.Summary() != "scoped grants off" {
		t.Fatalf("format/summary of grantable: []:\n%s\n%s", off.Format(), off.Summary())
	}
	none, _ := Parse("c.json", []byte(`{"execution":{}}`))
	if none.Grantable != nil || none.MaxGrantMinutes != 0 {
		t.Fatalf("absent keys: %+v", none)
	}
}

func TestGrantKeysRejected(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"execution":{"maxGrantMinutes":0}}`, `execution.maxGrantMinutes "0": Use a whole number of minutes from 1 to 1440; to turn scoped grants off, set grantable: [].`},
		{`{"execution":{"maxGrantMinutes":1441}}`, `maxGrantMinutes "1441"`},
		{`{"execution":{"maxGrantMinutes":"15"}}`, `maxGrantMinutes "15"`},
		{`{"execution":{"maxGrantMinutes":2.5}}`, `maxGrantMinutes "2.5"`},
		{`{"execution":{"grantable":"click"}}`, `execution.grantable: Use a list of step classes; [] turns scoped grants off.`},
		{`{"execution":{"grantable":["upload"]}}`, `execution.grantable[0] "upload": ` + MsgGrantClass},
		{`{"execution":{"grantable":["click","site_tool:bad name"]}}`, `grantable[1] "site_tool:bad name"`},
		{`{"execution":{"grantable":[null]}}`, `grantable[0]`},
		{`{"execution":{"grantables":[]}}`, `Unknown key (known: browserOrigins, blockBrowserUploads, consentFloor, maxGrantMinutes, grantable)`},
	} {
		_, err := Parse("p.json", []byte(c.doc))
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.doc, err, c.want)
		}
	}
}

func TestGrantKeysMergeStrictest(t *testing.T) {
	a := &Policy{Sources: []string{"a"}, MaxGrantMinutes: 30, Grantable: []string{"click", "fill", "site_tool"}}
	b := &Policy{Sources: []string{"b"}, MaxGrantMinutes: 10, Grantable: []string{"click", "read", "site_tool:save_draft"}}
	open := &Policy{Sources: []string{"open"}}
	m := Merge(a, open, b)
	if m.MaxGrantMinutes != 10 || !slices.Equal(m.Grantable, []string{"click", "site_tool:save_draft"}) {
		t.Fatalf("merged %d %v", m.MaxGrantMinutes, m.Grantable)
	}
	if m := Merge(open, a); m.MaxGrantMinutes != 30 || !slices.Equal(m.Grantable, a.Grantable) {
		t.Fatalf("absent ∩ a = %d %v", m.MaxGrantMinutes, m.Grantable)
	}
	off := &Policy{Sources: []string{"off"}, Grantable: []string{}}
	if m := Merge(a, off); m.Grantable == nil || len(m.Grantable) != 0 {
		t.Fatalf("a ∩ [] = %#v", m.Grantable)
	}
	if m := Merge(open, open); m.Grantable != nil || m.MaxGrantMinutes != 0 {
		t.Fatalf("no file restricts: %+v", m)
	}
	if got := Merge(a, b).Summary(); got != "grants: click,site_tool:save_draft ≤ 10 min" {
		t.Fatalf("summary %q", got)
	}
}

// FuzzParse: any bytes give a policy or a *ValidationError, never a panic;
// a policy parsed from them merges with itself to the same grant limits.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"execution":{"maxGrantMinutes":10,"grantable":["click","site_tool:x"]}}`,
		"execution:\n  grantable: []\n  maxGrantMinutes: 1440\n",
		`{"execution":{"browserOrigins":["https://a.example"],"blockBrowserUploads":true,"consentFloor":"thread"}}`,
		"execution:\n  grantable: &g [read]\n  browserOrigins: *g\n",
	} {
		f.Add("p.yaml", []byte(s))
		f.Add("p.json", []byte(s))
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		p, err := Parse(name, data)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) == 0 {
				t.Fatalf("error %v is not a ValidationError with problems", err)
			}
			return
		}
		m := Merge(p, p)
		if m.MaxGrantMinutes != p.MaxGrantMinutes || !slices.Equal(m.Grantable, p.Grantable) || (m.Grantable == nil) != (p.Grantable == nil) {
			t.Fatalf("p ∩ p changed the grant limits: %+v vs %+v", m, p)
		}
	})
}
