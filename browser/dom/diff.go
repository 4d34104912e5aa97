package dom

import (
	"sort"
	"strconv"
	"strings"
)

// maxDiffLines bounds a since diff; past it the agent should page a full
// observation instead.
const maxDiffLines = MaxElements

func diffObs(base, o *observation) *Diff {
	d := &Diff{Since: base.id}
	n := 0
	for _, e := range o.elements {
		old, had := base.sig[e.Ref]
		switch {
		case !had:
			d.Added = append(d.Added, e)
		case old != o.sig[e.Ref]:
			d.Changed = append(d.Changed, e)
		default:
			continue
		}
		if n++; n >= maxDiffLines {
			d.Truncated = true
			break
		}
	}
	var removed []string
	for ref := range base.sig {
		if _, ok := o.sig[ref]; !ok {
			removed = append(removed, ref)
		}
	}
	sort.Slice(removed, func(i, j int) bool { return refNum(removed[i]) < refNum(removed[j]) })
	if len(removed) > maxDiffLines {
		removed, d.Truncated = removed[:maxDiffLines], true
	}
	d.Removed = removed
	d.TextAdded, d.TextRemoved = lineDiff(base.text, o.text)
	return d
}

func refNum(r string) int { n, _ := strconv.Atoi(strings.TrimPrefix(r, "e")); return n }

// lineDiff is a multiset difference of text lines, capped so a rewritten
// page does not flood the diff.
func lineDiff(a, b string) (added, removed []string) {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	return capLines(minus(lb, la), 2000), capLines(minus(la, lb), 2000)
}

// minus is xs, in order, less one occurrence per line of ys.
func minus(xs, ys []string) []string {
	n := make(map[string]int, len(ys))
	for _, l := range ys {
		n[l]++
	}
	var out []string
	for _, l := range xs {
		if n[l] > 0 {
			n[l]--
			continue
		}
		out = append(out, l)
	}
	return out
}

func capLines(ls []string, budget int) []string {
	var out []string
	for _, l := range ls {
		if strings.TrimSpace(l) == "" {
			continue
		}
		r := []rune(l)
		if len(r) > 200 {
			l = string(r[:199]) + "…"
		}
		if budget -= len(l); budget < 0 {
			out = append(out, "…")
			break
		}
		out = append(out, l)
	}
	return out
}
