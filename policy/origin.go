package policy

import (
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// MsgInvalidOrigin is the operator-facing text for a browserOrigins entry that
// is not an exact http(s) origin (design.md §8 wording).
const MsgInvalidOrigin = "Use an HTTP or HTTPS site without a path, credentials, or query."

// ErrInvalidOrigin is returned by NormalizeOrigin. An operator is shown
// MsgInvalidOrigin for it.
var ErrInvalidOrigin = errors.New("invalid origin: use an HTTP or HTTPS site without a path, credentials, or query")

// hostProfile follows the WHATWG URL "domain to ASCII" settings Chromium
// uses, so an IDN entry and the URL the browser reports agree byte for byte:
// non-transitional mapping, Bidi and joiner checks on, hyphen and STD3 checks
// off (browsers accept labels like "r3---sn" and "_dmarc").
var hostProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.CheckHyphens(false),
	idna.StrictDomainName(false),
)

// NormalizeOrigin returns the exact origin written in s: lowercase scheme and
// host, IDN host in punycode, IPv6 host in brackets, default port dropped, no
// trailing "/". s must be an http or https URL with no path other than "/",
// no credentials, no query and no fragment; anything else is ErrInvalidOrigin.
// Surrounding white space is ignored.
func NormalizeOrigin(s string) (string, error) {
	s = strings.TrimSpace(s)
	// url.Parse drops an empty "#" and keeps no trace of it.
	if strings.Contains(s, "#") {
		return "", ErrInvalidOrigin
	}
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.ForceQuery ||
		(u.Path != "" && u.Path != "/") || u.RawPath != "" {
		return "", ErrInvalidOrigin
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", ErrInvalidOrigin
	}
	o, ok := originOf(u)
	if !ok {
		return "", ErrInvalidOrigin
	}
	return o, nil
}

// requestOrigin is the origin a request URL is compared under: ws and wss
// speak to the same server as http and https. Paths, queries and credentials
// are ignored; they do not change who receives the request.
func requestOrigin(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return "", false
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	case "http", "https":
	default:
		return "", false
	}
	return originOf(u)
}

// originOf builds the serialized origin of an http(s) URL whose scheme is
// already lowercase.
func originOf(u *url.URL) (string, bool) {
	host, ok := canonicalHost(u.Hostname())
	if !ok {
		return "", false
	}
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	b.WriteString(host)
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", false
		}
		defaultPort := u.Scheme == "http" && n == 80 || u.Scheme == "https" && n == 443
		if !defaultPort {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(n))
		}
	}
	return b.String(), true
}

// hostByte reports whether c may appear in a host's ASCII form: a lowercase
// letter, a digit, "-", "_" or ".".
func hostByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// canonicalHost returns the host as a browser serializes it, or false when it
// is not a host a policy can name.
func canonicalHost(h string) (string, bool) {
	if h == "" {
		return "", false
	}
	if strings.Contains(h, ":") {
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", false
		}
		return "[" + a.String() + "]", true
	}
	if !utf8.ValidString(h) {
		return "", false
	}
	ascii, err := hostProfile.ToASCII(h)
	if err != nil || ascii == "" {
		return "", false
	}
	ascii = strings.ToLower(ascii)
	// The ASCII form is what gets stored and compared, so it must itself be
	// a valid host that maps to itself.
	if again, err := hostProfile.ToASCII(ascii); err != nil || strings.ToLower(again) != ascii {
		return "", false
	}
	// After mapping, only LDH, "_" and dots may remain: anything else (a
	// fullwidth colon mapped to ":", say) would re-parse as something else.
	for i := 0; i < len(ascii); i++ {
		if !hostByte(ascii[i]) {
			return "", false
		}
	}
	labels := strings.Split(strings.TrimSuffix(ascii, "."), ".")
	for _, l := range labels {
		if l == "" {
			return "", false
		}
	}
	// A numeric last label makes the host an IPv4 address to a browser, which
	// accepts forms like "127.1" and "0x7f.0.0.1"; only the canonical dotted
	// quad is unambiguous.
	if last := labels[len(labels)-1]; isNumeric(last) {
		a, err := netip.ParseAddr(ascii)
		if err != nil || !a.Is4() || a.String() != ascii {
			return "", false
		}
	}
	return ascii, true
}

func isNumeric(label string) bool {
	if l, ok := strings.CutPrefix(label, "0x"); ok {
		for i := 0; i < len(l); i++ {
			if !strings.ContainsRune("0123456789abcdef", rune(l[i])) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(label); i++ {
		if label[i] < '0' || label[i] > '9' {
			return false
		}
	}
	return true
}

// displayOrigin returns the Unicode form of a punycode origin for display, or
// "" when it has none.
func displayOrigin(origin string) string {
	if !strings.Contains(origin, "xn--") {
		return ""
	}
	scheme, rest, _ := strings.Cut(origin, "://")
	host, port, _ := strings.Cut(rest, ":")
	u, err := idna.Display.ToUnicode(host)
	if err != nil || u == host {
		return ""
	}
	if port != "" {
		u += ":" + port
	}
	return scheme + "://" + u
}
