package consent

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/tabwarden/tabwarden/consent/errcode"
	"golang.org/x/net/idna"
)

// rank orders profiles by permissiveness; anything unknown is strict so a
// typo can never widen consent.
func rank(p Profile) int {
	switch p {
	case ProfileThread:
		return 1
	case ProfileTrusted:
		return 2
	}
	return 0
}

func effectiveProfile(p, floor Profile) Profile {
	eff := p
	if rank(eff) == 0 {
		eff = ProfileStrict
	}
	if floor != "" && rank(floor) < rank(eff) {
		eff = floor
		if rank(eff) == 0 {
			eff = ProfileStrict
		}
	}
	return eff
}

// canonOrigin reduces s to scheme://host[:port] with the default port
// dropped, so "https://A.test:443" and "https://a.test" are one origin and
// "http://a.test" or "https://a.test:8443" are others.
func canonOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return "", errcode.Errorf(errcode.InvalidURL, errcode.NextNone, "not an origin: %q", s)
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}

// unicodeOrigin decodes punycode host labels for display; the raw origin is
// kept next to it so a homograph is visible.
func unicodeOrigin(origin string) string {
	u, err := url.Parse(origin)
	if err != nil || !strings.Contains(u.Host, "xn--") {
		return origin
	}
	host, err := idna.ToUnicode(u.Hostname())
	if err != nil {
		return origin
	}
	if p := u.Port(); p != "" {
		host += ":" + p
	}
	return u.Scheme + "://" + host
}

// baseKind is the panel a request needs in the strict profile.
func baseKind(req Request) (ReviewKind, error) {
	switch req.Gate {
	case GateNavigation:
		return KindNavigation, nil
	case GateRead:
		return KindRead, nil
	case GateAction:
		switch {
		case len(req.Plan) > 0:
			return KindPlan, nil
		case req.Upload != nil:
			return KindUpload, nil
		case req.ToolCall != nil:
			return KindToolCall, nil
		case req.Action != nil:
			return KindAction, nil
		}
		return "", errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "action request carries no action, plan, upload or tool call")
	case GateDisclosure:
		if req.Disclosure == nil {
			return "", errcode.Errorf(errcode.InvalidResult, errcode.NextNone, "disclosure request carries no result")
		}
		return KindDisclosure, nil
	}
	return "", errcode.Errorf(errcode.BrowserOperationFailed, errcode.NextNone, "unknown gate %q", req.Gate)
}

func isScroll(req Request) bool {
	return req.Gate == GateAction && len(req.Plan) == 0 && req.Upload == nil &&
		req.ToolCall == nil && req.Action != nil && req.Action.Type == ActionScroll
}

// grants is what the operator has allowed one conversation. Memory only.
type grants struct {
	nav     map[navKey]struct{}
	read    map[string]struct{}
	thread  bool
	session bool
}

type navKey struct {
	tab    TabID
	origin string
}

func newGrants() grants {
	return grants{nav: map[navKey]struct{}{}, read: map[string]struct{}{}}
}

// covers reports whether g already allows req (origin canonical).
func (g *grants) covers(req Request, origin string) bool {
	switch req.Gate {
	case GateNavigation:
		_, ok := g.nav[navKey{req.Tab, origin}]
		return ok || g.thread || g.session
	case GateRead:
		_, ok := g.read[origin]
		return ok || g.thread || g.session
	case GateAction:
		return g.session || (g.thread && isScroll(req))
	}
	return false // disclosure: every result asks
}

func (g *grants) revokeTab(tab TabID) {
	for k := range g.nav {
		if k.tab == tab {
			delete(g.nav, k)
		}
	}
}

// describe lists the active grants for the TUI, most powerful first.
func (g *grants) describe() []string {
	var out []string
	if g.session {
		out = append(out, "session")
	}
	if g.thread {
		out = append(out, "thread control")
	}
	var navs, reads []string
	for k := range g.nav {
		navs = append(navs, fmt.Sprintf("navigation %s in tab %s", k.origin, k.tab))
	}
	for o := range g.read {
		reads = append(reads, "read "+o)
	}
	sort.Strings(navs)
	sort.Strings(reads)
	out = append(out, navs...)
	return append(out, reads...)
}

func (g *grants) tabOrigins(tab TabID) []string {
	var out []string
	for k := range g.nav {
		if k.tab == tab {
			out = append(out, k.origin)
		}
	}
	sort.Strings(out)
	return out
}

// panelText is the fixed wording of each panel (design.md §4 key labels).
func panelText(kind ReviewKind, req Request) (title, approve, consequence string) {
	switch kind {
	case KindNavigation:
		return "Allow website navigation?", "Allow origin in this tab",
			"The tab may load this origin. Reading and actions still ask."
	case KindRead:
		return "Allow reading this website?", "Allow reading this origin",
			"The agent may read pages of this origin in this conversation. Actions still ask."
	case KindAction:
		return "Allow this action?", "Allow once",
			"The action runs once on this page. The next action asks again."
	case KindPlan:
		n := len(req.Plan)
		return fmt.Sprintf("Allow these %d actions?", n), fmt.Sprintf("Allow these %d actions", n),
			fmt.Sprintf("These %d actions run once, in order, on this page; the plan stops at the first failure.", n)
	case KindUpload:
		return "Allow this upload?", "Allow once",
			"This file is given to the page once."
	case KindToolCall:
		return "Allow this site tool call?", "Allow once",
			"The site tool runs once with this input. Its result still asks before it is shared."
	case KindDisclosure:
		return "Share this result with the agent?", "Share result",
			"The result reaches the agent's conversation. Denying withholds it; the tool has already run."
	case KindThread:
		return "Allow browser control for this thread?", "Allow browser control for this thread",
			"The agent may navigate, read and scroll in every tab of this conversation. Other actions, uploads, site tools and results still ask."
	case KindSession:
		return "Allow browser control for this session?", "Allow for this session",
			"The agent may navigate, read and act in this conversation without asking. Results still ask before they are shared."
	}
	return string(kind), "Allow", ""
}
