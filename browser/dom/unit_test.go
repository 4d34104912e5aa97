package dom

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

func TestLineForm(t *testing.T) {
	for _, c := range []struct {
		e    Element
		want string
	}{
		{Element{Ref: "e12", Role: "button", Name: "Add to cart"}, `e12 button "Add to cart"`},
		{Element{Ref: "e13", Role: "textbox", Name: "Qty", Value: "1", HasValue: true}, `e13 textbox "Qty" value="1"`},
		{Element{Ref: "e14", Role: "checkbox", Name: "Favourite", Checked: "checked"}, `e14 checkbox "Favourite" checked`},
		{Element{Ref: "e15", Role: "combobox", Name: "Size", Value: "M", HasValue: true, Options: []string{"S", "M", "L"}}, `e15 combobox "Size" value="M" options=S|M|L`},
		{Element{Ref: "e16", Role: "button", Name: "Pay", Disabled: true, Offscreen: true}, `e16 button "Pay" disabled offscreen`},
		{Element{Ref: "e17", Role: "textbox", Name: "Password", Value: "x", HasValue: true, Sensitive: true}, `e17 textbox "Password" sensitive`},
		{Element{Ref: "e18", Role: "link", Name: "say \"hi\"\nnow"}, `e18 link "say \"hi\" now"`},
		{Element{Ref: "e19", Role: "combobox", Name: "", Options: []string{"a|b", "c"}, MoreOptions: 3}, `e19 combobox "" options=a¦b|c|…+3`},
	} {
		if got := line(c.e); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

func TestDropNameLines(t *testing.T) {
	elems := []rawElement{{Name: "Add to cart"}, {Name: "Details"}, {Name: "Size", Options: []string{"S", "M", "L"}}, {Name: "Go"}}
	text := "Shop\nAdd to cartDetails\nS\nM\nL\nAdd to cart now\nSearch Go\nGo"
	got, n := dropNameLines(text, elems)
	if want := "Shop\nAdd to cart now\nSearch Go"; got != want || n != 5 {
		t.Fatalf("got %q (%d dropped), want %q", got, n, want)
	}
}

func TestShortURLAndCursor(t *testing.T) {
	if got := shortURL("https://a.example:8443/p/q?token=secret#frag"); got != "https://a.example:8443/p/q" {
		t.Fatal(got)
	}
	id, e, x, ok := parseCursor("o3-ab12:200:4000")
	if !ok || id != "o3-ab12" || e != 200 || x != 4000 {
		t.Fatal(id, e, x, ok)
	}
	for _, bad := range []string{"", "o3", "o3:1", "o3:-1:0", ":1:2", "o3:a:0"} {
		if _, _, _, ok := parseCursor(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		a    Action
		code errcode.Code
	}{
		{Action{Type: "key", Key: "F5"}, errcode.InvalidKey},
		{Action{Type: "key", Key: "ctrl+a"}, errcode.InvalidKey},
		{Action{Type: "scroll", DeltaY: 1200.5}, errcode.InvalidScroll},
		{Action{Type: "fill", Ref: "e1", Text: strings.Repeat("é", MaxFillChars+1)}, errcode.InvalidAction},
		{Action{Type: "drag", Ref: "e1"}, errcode.InvalidAction},
	} {
		if err := validate(c.a); errcode.Of(err) != c.code {
			t.Errorf("%+v: %v, want %s", c.a, err, c.code)
		}
	}
	for _, a := range []Action{
		{Type: "key", Key: "Esc"}, {Type: "key", Key: "PageDown"}, {Type: "key", Key: "space"}, {Type: "key", Key: "ArrowLeft"},
		{Type: "scroll", DeltaY: -1200}, {Type: "fill", Ref: "e1", Text: strings.Repeat("é", MaxFillChars)}, {Type: "fill", Ref: "e1"},
	} {
		if err := validate(a); err != nil {
			t.Errorf("%+v: %v", a, err)
		}
	}
}

func TestParseRoleName(t *testing.T) {
	for in, want := range map[string][2]string{
		`button "Add to cart"`: {"button", "Add to cart"},
		`Link  Next page`:      {"link", "Next page"},
		`textbox "say \"hi\""`: {"textbox", `say "hi"`},
	} {
		r, n, ok := parseRoleName(in)
		if !ok || r != want[0] || n != want[1] {
			t.Errorf("%q → %q %q %v", in, r, n, ok)
		}
	}
	if _, _, ok := parseRoleName("button"); ok {
		t.Error("a role alone parsed")
	}
}

func TestSamePixels(t *testing.T) {
	enc := func(mod func(*image.RGBA)) []byte {
		img := image.NewRGBA(image.Rect(0, 0, 200, 100))
		for i := range img.Pix {
			img.Pix[i] = 255
		}
		if mod != nil {
			mod(img)
		}
		var b bytes.Buffer
		_ = png.Encode(&b, img)
		return b.Bytes()
	}
	base := enc(nil)
	caret := enc(func(m *image.RGBA) { m.Set(150, 80, color.Black) }) // one far pixel
	near := enc(func(m *image.RGBA) { m.Set(12, 12, color.Black) })
	wide := enc(func(m *image.RGBA) {
		for x := 100; x < 200; x++ {
			m.Set(x, 90, color.Black)
		}
	})
	for _, c := range []struct {
		img  []byte
		want bool
	}{{base, true}, {caret, true}, {near, false}, {wide, false}} {
		if got, err := samePixels(base, c.img, 10, 10); err != nil || got != c.want {
			t.Errorf("samePixels = %v %v, want %v", got, err, c.want)
		}
	}
}

func TestLineDiffIsAMultisetDifference(t *testing.T) {
	added, removed := lineDiff("a\nb\nb\nc", "b\nc\nc\nd")
	if strings.Join(added, "|") != "c|d" || strings.Join(removed, "|") != "a|b" {
		t.Fatalf("added %q removed %q", added, removed)
	}
}

// runeSlice and utf16Len must agree with the conversions they replace.
func TestRuneSliceAndUTF16Len(t *testing.T) {
	for _, s := range []string{"", "abc", "héllo wörld", "a😀b\nc", "日本語のテキスト", "😀😀"} {
		rs := []rune(s)
		if got, want := utf16Len(s), len(utf16.Encode(rs)); got != want {
			t.Errorf("utf16Len(%q) = %d, want %d", s, got, want)
		}
		for from := 0; from < len(rs); from++ {
			for to := from + 1; to <= len(rs); to++ {
				if got, want := runeSlice(s, from, to), string(rs[from:to]); got != want {
					t.Errorf("runeSlice(%q, %d, %d) = %q, want %q", s, from, to, got, want)
				}
			}
		}
	}
}

func TestCutAtBoundary(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"one two\nthree four five", "one two\nthree four"}, // the line end is in the first half: a word end
		{"heading line\nsecond line\nthi", "heading line\nsecond line"},
		{"abcdefghij klm", "abcdefghij"},
		{"ab cdefghijklmnop", "ab cdefghijklmnop"}, // no end in the second half: kept whole
		{"", ""},
	} {
		if got := cutAtBoundary(c.in); got != c.want {
			t.Errorf("cutAtBoundary(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
