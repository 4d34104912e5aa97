package dom

import (
	"context"
	"fmt"
	"strings"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Verify assertion kinds (design.md §5).
const (
	TextContains   = "text_contains"
	TextAbsent     = "text_absent"
	URLIs          = "url_is"
	TitleContains  = "title_contains"
	ElementVisible = "element_visible"
)

// VerifyResult is browser_verify's answer. Evidence quotes the page and is
// untrusted site content.
type VerifyResult struct {
	Verified bool   `json:"verified"`
	Evidence string `json:"evidence"`
}

// Verify checks one assertion against the page as it is now. Any failure to
// read the page is an error with Verified false: a stale page, timeout,
// cancel or lost target never verifies. element_visible takes `role "name"`
// or `role name` (the observation's text form).
func (t *Tab) Verify(ctx context.Context, kind, value string) (VerifyResult, error) {
	if strings.TrimSpace(value) == "" {
		return VerifyResult{}, errcode.Errorf(errcode.InvalidAssertion, errcode.NextNone, "the assertion value is empty")
	}
	switch kind {
	case TextContains, TextAbsent:
		text, err := t.run(ctx, "text")
		if err != nil {
			return VerifyResult{}, cdpedge.Failed(ctx, "verify", err)
		}
		i := strings.Index(foldSpace(text), foldSpace(value))
		found := i >= 0
		ev := "not found in the page text"
		if found {
			ev = "found: " + quote(excerpt(foldSpace(text), i, len(foldSpace(value))))
		}
		return VerifyResult{Verified: found == (kind == TextContains), Evidence: ev}, nil
	case URLIs, TitleContains:
		s, err := t.state(ctx)
		if err != nil {
			return VerifyResult{}, cdpedge.Failed(ctx, "verify", err)
		}
		if kind == URLIs {
			ok := s.Href == value || strings.SplitN(s.Href, "#", 2)[0] == value || shortURL(s.Href) == value
			return VerifyResult{Verified: ok, Evidence: "url is " + s.Href}, nil
		}
		ok := strings.Contains(strings.ToLower(s.Title), strings.ToLower(strings.TrimSpace(value)))
		return VerifyResult{Verified: ok, Evidence: "title is " + quote(s.Title)}, nil
	case ElementVisible:
		role, name, ok := parseRoleName(value)
		if !ok {
			return VerifyResult{}, errcode.Errorf(errcode.InvalidAssertion, errcode.NextNone, `element_visible takes a role and a name, e.g. button "Add to cart"`)
		}
		var r struct {
			Found []struct {
				Ref    string `json:"ref"`
				Name   string `json:"name"`
				InView bool   `json:"inView"`
			} `json:"found"`
			Near []struct {
				Ref  string `json:"ref"`
				Name string `json:"name"`
			} `json:"near"`
		}
		if err := t.runJSON(ctx, &r, "visible", role, name); err != nil {
			return VerifyResult{}, cdpedge.Failed(ctx, "verify", err)
		}
		if len(r.Found) > 0 {
			f := r.Found[0]
			where := "in the viewport"
			if !f.InView {
				where = "rendered, outside the viewport"
			}
			return VerifyResult{Verified: true, Evidence: fmt.Sprintf("%s %s %s is visible (%s)", f.Ref, role, quote(f.Name), where)}, nil
		}
		ev := fmt.Sprintf("no visible %s named %s", role, quote(name))
		if len(r.Near) > 0 {
			var names []string
			for _, n := range r.Near {
				names = append(names, n.Ref+" "+quote(n.Name))
			}
			ev += "; visible " + role + "s: " + strings.Join(names, ", ")
		}
		return VerifyResult{Verified: false, Evidence: ev}, nil
	}
	return VerifyResult{}, errcode.Errorf(errcode.InvalidAssertion, errcode.NextNone,
		"unknown assertion %q (text_contains, text_absent, url_is, title_contains, element_visible)", kind)
}

func parseRoleName(v string) (role, name string, ok bool) {
	v = strings.TrimSpace(v)
	i := strings.IndexAny(v, " \t")
	if i <= 0 {
		return "", "", false
	}
	role, name = strings.ToLower(v[:i]), strings.TrimSpace(v[i+1:])
	if len(name) >= 2 && name[0] == '"' && name[len(name)-1] == '"' {
		name = strings.ReplaceAll(strings.ReplaceAll(name[1:len(name)-1], `\"`, `"`), `\\`, `\`)
	}
	return role, name, name != ""
}

func foldSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

func excerpt(s string, i, n int) string {
	from, to := max(0, i-60), min(len(s), i+n+60)
	for from > 0 && !isBoundary(s, from) {
		from--
	}
	for to < len(s) && !isBoundary(s, to) {
		to++
	}
	return s[from:to]
}

func isBoundary(s string, i int) bool { return i == 0 || i == len(s) || s[i]&0xC0 != 0x80 }
