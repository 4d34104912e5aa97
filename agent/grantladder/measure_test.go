package grantladder_test

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
)

// taskResult is what one run of the 50-step task cost the operator.
type taskResult struct {
	conv     consent.ConversationID
	steps    int
	keys     int
	asks     []ask
	refusals []string
	uses     int // steps a scoped grant let through (audit grant_use)
	readUses int // of which reads (observe, verify)
	regrants int // s keys that gave again a class the take-over revoked
	shop     *fixture.Server
	partner  *fixture.Server
	grants   int // grants given (audit grant)
}

// shoppingTask is the scripted agent's task on shop (one origin) with a
// final link to partner (a second origin): 50 steps — open, the first
// observe, 30 clicks/fills/selects across the shop's pages, 8 scrolls, two
// uploads, one password field (which only a person may fill: a hand-off),
// one card number, the link to the second origin and its observe, three
// verifies. The agent observes before every action (each observation is
// spent by one action); those observations pass the read gate the first
// one opened and are not counted as steps.
func shoppingTask(t *testing.T, mode string) taskResult {
	t.Helper()
	// Each run its own two origins, so the witness counts are its own.
	shop, partner := newSite(t), newSite(t)
	a := newAgent(t, "task-"+strings.TrimSuffix(mode, "!"))
	op := newOperator(t, engine(), a.conv, mode)
	op.watch = func(r consent.Review) int {
		switch {
		case r.Upload != nil:
			return events(shop, "change-"+strings.TrimSuffix(r.Upload.Filename, ".pdf"))
		case r.Action != nil && r.Action.Name == "Card":
			return events(shop, "input-card")
		case r.Origin == partner.URL:
			return partner.Total()
		}
		return 0
	}

	a.open(shop.URL + "/grants/shop.html?partner=" + url.QueryEscape(partner.URL+"/grants/partner.html"))
	a.steps++
	a.observe()
	// Signing in comes first, as on most shops. The password is the
	// person's: the console refuses it, the agent hands off, the person
	// signs in and resumes (r). The take-over revokes the tab's navigation
	// grant (and would revoke scoped grants had any been given).
	a.click("link", "Account")
	a.waitPath("/grants/account.html")
	a.fill("Username", "ana")
	if res := a.act("fill", "textbox", "Password", map[string]any{"text": "not-the-agents"}); res["code"] != "sign_in_required" {
		t.Fatalf("password fill: %v", res)
	}
	a.step("browser_handoff", map[string]any{"reason": "sign in"})
	op.resume()
	a.click("link", "Shop")
	a.waitPath("/grants/shop.html")
	// The shop's front page and two items.
	a.fill("Search", "lamp")
	a.choose("Category", "Lights")
	a.click("button", "Filter")
	a.scroll(600)
	a.scroll(-600)
	a.click("link", "Lamp")
	a.waitPath("/grants/item.html")
	a.choose("Quantity", "2")
	a.click("button", "Add to cart")
	a.steps++
	a.must("browser_verify", map[string]any{"assertion": "title_contains", "value": "item"})
	a.scroll(500)
	a.click("link", "Back to shop")
	a.waitPath("/grants/shop.html")
	a.click("link", "Chair")
	a.waitPath("/grants/item.html")
	a.choose("Quantity", "3")
	a.click("button", "Add to cart")
	a.fill("Gift note", "For Ana")
	a.click("link", "Back to shop")
	a.waitPath("/grants/shop.html")
	a.fill("Search", "chair")
	a.choose("Category", "Seats")
	a.click("button", "Filter")
	a.scroll(400)
	a.click("link", "Checkout")
	a.waitPath("/grants/checkout.html")
	a.fill("Full name", "Ana Lima")
	a.fill("Street", "1 Rue Haute")
	a.fill("City", "Lyon")
	a.fill("Postcode", "69001")
	a.choose("Country", "Germany")
	a.click("button", "Express delivery")
	a.scroll(300)
	a.upload("Receipt", "receipt.pdf")
	a.upload("Proof of address", "proof.pdf")
	a.fill("Card", "4111111111111111")
	a.fill("Coupon", "WELCOME")
	a.click("button", "Apply coupon")
	a.choose("Gift wrap", "Yes")
	a.scroll(800)
	a.click("button", "Place order")
	a.steps++
	a.must("browser_verify", map[string]any{"assertion": "text_contains", "value": "Order placed"})
	a.click("link", "Back to shop")
	a.waitPath("/grants/shop.html")
	a.scroll(500)
	a.scroll(-500)
	// The one link to the second origin.
	a.click("link", "Partner site")
	a.waitPath("/grants/partner.html")
	a.steps++
	a.observe()
	a.steps++
	a.must("browser_verify", map[string]any{"assertion": "text_contains", "value": "Partner offers"})

	// What the fixture saw: every step ran once, the uploads and the card
	// once each, after their reviews.
	waitEvents(t, shop, "change-receipt", 1)
	waitEvents(t, shop, "change-proof", 1)
	waitEvents(t, shop, "input-card", 1)
	waitEvents(t, shop, "click-place", 1)

	r := taskResult{conv: a.conv, steps: a.steps, shop: shop, partner: partner}
	r.keys, r.asks, r.refusals = op.snapshot()
	op.mu.Lock()
	granted := map[string]bool{}
	for i, x := range r.asks {
		if x.Key != "s" {
			continue
		}
		if i >= op.resumedAt && granted[x.Action] {
			r.regrants++
		}
		if i < op.resumedAt {
			granted[x.Action] = true
		}
	}
	op.mu.Unlock()
	for _, rec := range stack.Launched().Audit.Records() {
		if rec.Conversation != string(a.conv) {
			continue
		}
		switch rec.Kind {
		case audit.KindGrantUse:
			r.uses++
			if rec.Gate == string(consent.GateRead) {
				r.readUses++
			}
		case audit.KindGrant:
			r.grants++
		}
	}
	return r
}

// stillAsked checks, from the operator's log, that the never-grantable
// steps of the task asked, each before the fixture saw its effect.
func stillAsked(t *testing.T, name string, r taskResult) {
	t.Helper()
	partner := r.partner
	var uploads, card, partnerNav, crossClick int
	for _, a := range r.asks {
		switch {
		case a.Action == "upload":
			uploads++
			if a.Witness != 0 || !a.Refused || a.Offer != "uploads always ask" {
				t.Errorf("%s: upload review %+v: the file reached the page first or s was offered", name, a)
			}
		case a.Action == "fill" && strings.Contains(a.Offer, "payment"):
			card++
			if a.Witness != 0 {
				t.Errorf("%s: the card number reached the page before its review", name)
			}
		case a.Kind == consent.KindNavigation && a.Origin == partner.URL:
			partnerNav++
			if a.Witness != 0 {
				t.Errorf("%s: %d request(s) reached the second origin before its review", name, a.Witness)
			}
		case a.Action == "click" && a.Refused && a.Offer == "cross-origin steps always ask":
			crossClick++
		}
	}
	if uploads != 2 || card != 1 || partnerNav != 1 || crossClick != 1 {
		t.Errorf("%s: asked uploads %d (want 2), card %d (1), second-origin navigation %d (1), cross-origin click %d (1): %s",
			name, uploads, card, partnerNav, crossClick, lineFor(r.asks))
	}
}

// grantUsesInScope checks every step a grant let through against the
// grant: same conversation, exact origin, its class, inside its window.
func grantUsesInScope(t *testing.T, conv consent.ConversationID) int {
	t.Helper()
	type given struct {
		origin, class string
		until         time.Time
	}
	grants := map[string]given{}
	n := 0
	for _, rec := range stack.Launched().Audit.Records() {
		switch rec.Kind {
		case audit.KindGrant:
			// Note: "class CLASS for N min, until RFC3339".
			f := strings.Fields(rec.Note)
			if len(f) < 4 || f[0] != "class" {
				t.Fatalf("grant record note %q", rec.Note)
			}
			class := f[1]
			u, err := time.Parse(time.RFC3339, f[len(f)-1])
			if err != nil {
				t.Fatalf("grant record note %q: %v", rec.Note, err)
			}
			grants[rec.Grant] = given{origin: rec.Origin, class: class, until: u}
		case audit.KindGrantUse:
			g, ok := grants[rec.Grant]
			class := rec.Action
			if rec.Gate == string(consent.GateRead) {
				class = "read"
			}
			if !ok || g.origin != rec.Origin || g.class != class || !rec.Time.Before(g.until) {
				t.Errorf("step outside its grant: %+v under %+v", rec, g)
			}
			if rec.Conversation == string(conv) {
				n++
			}
		}
	}
	return n
}

// TestGrantLadderFiftySteps is the measurement of issue 22: it prints the
// keypresses of the task with `a` only and with `s`, what still asked, a
// step one second after a grant's window and a run under a policy with
// `grantable: []`. It asserts what must hold (the never-grantable steps
// asked, nothing ran outside a grant), never the figures themselves.
func TestGrantLadderFiftySteps(t *testing.T) {
	launch(t)
	out := os.Stdout
	fmt.Fprintf(out, "\ngrant ladder: a 50-step task on one origin, one link to a second (fixture servers on 127.0.0.1)\n")

	strict := shoppingTask(t, "a")
	stillAsked(t, "a only", strict)
	withS := shoppingTask(t, "s")
	stillAsked(t, "with s", withS)
	uses := grantUsesInScope(t, withS.conv)
	if strict.steps != 50 || withS.steps != 50 {
		t.Errorf("the task has %d / %d steps, want 50", strict.steps, withS.steps)
	}
	if strict.uses != 0 || withS.uses == 0 || uses != withS.uses {
		t.Errorf("grant uses: a-only %d, with s %d (in scope %d)", strict.uses, withS.uses, uses)
	}

	fmt.Fprintf(out, "%-34s %10s %8s %7s %12s\n", "run", "keypresses", "reviews", "grants", "under grant")
	fmt.Fprintf(out, "%-34s %10d %8d %7d %12s\n", "strict, a only", strict.keys, len(strict.asks), strict.grants, fmt.Sprint(strict.uses))
	fmt.Fprintf(out, "%-34s %10d %8d %7d %12s\n", "strict, s where offered (a on read)", withS.keys, len(withS.asks), withS.grants,
		fmt.Sprintf("%d acts", withS.uses-withS.readUses))
	floor := 0
	for _, a := range withS.asks {
		if a.Key != "s" {
			floor++
		}
	}
	floor++ // the r after the hand-off
	fmt.Fprintf(out, "keys s cannot save (navigation, read, r, never-grantable steps): %d; keys spent on s: %d (%d of them give again a class the sign-in take-over revoked)\n",
		floor, withS.keys-floor, withS.regrants)
	met := "not met"
	if withS.keys <= 8 {
		met = "met"
	}
	fmt.Fprintf(out, "goal <= 8 keys with s: %s (%d); the keys s cannot save alone are %d\n", met, withS.keys, floor)
	fmt.Fprintf(out, "keys with s, in order: %s, plus r after the hand-off\n", lineFor(withS.asks))
	var never []string
	for _, a := range withS.asks {
		if a.Refused {
			never = append(never, fmt.Sprintf("%s %s (%s)", a.Kind, a.Action, a.Offer))
		}
	}
	fmt.Fprintf(out, "never grantable, asked with s too: %s\n", strings.Join(never, "; "))

	// A grant's window, on the engine's clock held still: one second
	// before its end a click runs under it, one second after it asks again.
	expiry := newAgent(t, "expiry")
	op := newOperator(t, engine(), expiry.conv, "a")
	op.sFor = func(r consent.Review) bool { return r.Action != nil && r.Action.Type == consent.ActionClick }
	shop := newSite(t)
	op.watch = func(consent.Review) int { return events(shop, "click-filter") }
	before := events(shop, "click-filter")
	expiry.open(shop.URL + "/grants/shop.html")
	expiry.observe()
	expiry.click("button", "Filter") // s: every click on the shop, for the window
	waitEvents(t, shop, "click-filter", before+1)
	var given consent.ScopedGrant
	for _, g := range engine().Snapshot().Grants {
		if g.Conversation == expiry.conv {
			given = g
		}
	}
	keys0, _, _ := op.snapshot()
	frozen.Store(given.Expires.Add(-time.Second).UnixNano())
	res := expiry.mustAct("click", "button", "Filter", nil)
	keys1, _, _ := op.snapshot()
	frozen.Store(given.Expires.Add(time.Second).UnixNano())
	waitEvents(t, shop, "click-filter", before+2)
	seen := events(shop, "click-filter")
	expiry.mustAct("click", "button", "Filter", nil)
	keys2, asks, _ := op.snapshot()
	frozen.Store(0)
	last := asks[len(asks)-1]
	if given.ID == "" || res["grant"] != given.ID || keys1 != keys0 || keys2 != keys1+1 || last.Action != "click" || last.Witness != seen {
		t.Errorf("window: grant %q; 1s before its end the click ran under %v with %d key(s); 1s after, %d key(s), last review %+v (page saw %d clicks, %d before)",
			given.ID, res["grant"], keys1-keys0, keys2-keys1, last, last.Witness, seen)
	}
	fmt.Fprintf(out, "grant window %s: a click 1s before its end ran under %v with no key; 1s after its end it asked again (%d key; the page had seen nothing of it)\n",
		consent.DefaultGrantWindow, res["grant"], keys2-keys1)

	// Managed policy with grantable: [].
	engine().SetGrantLimits(consent.GrantLimits{Grantable: []consent.GrantClass{}})
	defer engine().SetGrantLimits(consent.GrantLimits{})
	off := shoppingTask(t, "s!")
	stillAsked(t, "grantable: []", off)
	if off.grants != 0 || off.uses != 0 || len(off.refusals) == 0 {
		t.Errorf("grantable: [] gave %d grant(s), %d use(s), %d refusal(s)", off.grants, off.uses, len(off.refusals))
	}
	for _, line := range off.refusals {
		if !strings.HasPrefix(line, "s refused: ") {
			t.Errorf("refusal line %q", line)
		}
	}
	fmt.Fprintf(out, "policy grantable: []: %d reviews, s pressed on %d of them and refused each time with %q; keypresses %d (%d without the refused s)\n",
		len(off.asks), len(off.refusals), firstPolicyRefusal(off.refusals), off.keys, off.keys-len(off.refusals))
}

func firstPolicyRefusal(lines []string) string {
	for _, l := range lines {
		if strings.Contains(l, "managed policy") {
			return l
		}
	}
	if len(lines) > 0 {
		return lines[0]
	}
	return ""
}
