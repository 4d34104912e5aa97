package dom

import (
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// Bounds of one observation page (design.md §6).
const (
	MaxElements      = 200
	DefaultTextChars = 4000
	// FirstLookTextChars is the text page of a document's first observation
	// when textChars is not given: a digest of the page's opening text,
	// cut at a line or word end, beside the whole element list. The rest
	// follows with the cursor (DefaultTextChars a page) or textChars.
	FirstLookTextChars = 600
	MaxTextChars       = 16000
	// maxStoredText bounds the page text kept for paging; beyond it the
	// header says the text was cut.
	maxStoredText = 1 << 20
)

// ObserveRequest is browser_observe's arguments.
type ObserveRequest struct {
	IncludeImage bool
	// Cursor continues a previous observation's element and text pages.
	Cursor string
	// Since asks for a diff against that observation.
	Since string
	// TextChars is the size of the text page; 0 means FirstLookTextChars
	// on a document's first observation and DefaultTextChars otherwise,
	// more than MaxTextChars is cut to MaxTextChars.
	TextChars int
}

// Rect is a box in top-level viewport CSS pixels.
type Rect struct {
	X int `json:"x"`
	Y int `json:"y"`
	W int `json:"w"`
	H int `json:"h"`
}

// Element is one interactive element as the model sees it.
type Element struct {
	Ref         string   `json:"ref"`
	Role        string   `json:"role"`
	Name        string   `json:"name"`
	Value       string   `json:"value,omitempty"`
	HasValue    bool     `json:"-"`
	Options     []string `json:"options,omitempty"`
	MoreOptions int      `json:"moreOptions,omitempty"`
	Checked     string   `json:"checked,omitempty"` // "checked" or "mixed"
	Selected    bool     `json:"selected,omitempty"`
	Expanded    bool     `json:"expanded,omitempty"`
	Disabled    bool     `json:"disabled,omitempty"`
	Offscreen   bool     `json:"offscreen,omitempty"`
	Sensitive   bool     `json:"sensitive,omitempty"`
	Bounds      Rect     `json:"bounds"`
}

// Region is a part of the page the text form cannot describe: a closed
// shadow root or a cross-origin frame. The agent needs an image for it.
type Region struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"` // "frame" or "closed-shadow-root"
	Label  string `json:"label"`
	Bounds Rect   `json:"bounds"`
	Hint   string `json:"hint"`
}

// Counts are the header's numbers. Ranges are 1-based and inclusive; a
// zero From means nothing of that kind is on this page.
type Counts struct {
	Elements     int `json:"elements"`
	InViewport   int `json:"inViewport"`
	ElementsFrom int `json:"elementsFrom"`
	ElementsTo   int `json:"elementsTo"`
	Regions      int `json:"regions"`
	TextChars    int `json:"textChars"`
	TextFrom     int `json:"textFrom"`
	TextTo       int `json:"textTo"`
	// TextLinesDropped counts page text lines left out because they only
	// repeat element names or select options listed above.
	TextLinesDropped int `json:"textLinesDropped"`
}

// Diff is the answer to ObserveRequest.Since.
type Diff struct {
	Since       string    `json:"since"`
	Added       []Element `json:"added,omitempty"`
	Changed     []Element `json:"changed,omitempty"`
	Removed     []string  `json:"removed,omitempty"`
	TextAdded   []string  `json:"textAdded,omitempty"`
	TextRemoved []string  `json:"textRemoved,omitempty"`
	Truncated   bool      `json:"truncated,omitempty"`
}

// Viewport is the layout viewport in CSS pixels.
type Viewport struct {
	Width  int     `json:"width"`
	Height int     `json:"height"`
	DPR    float64 `json:"devicePixelRatio"`
}

// Observation is the result of Observe: the structured data and the text
// form the model reads. All strings but the ids came from the site and are
// untrusted.
type Observation struct {
	ID         string    `json:"observationId"`
	TabID      string    `json:"tabId"`
	URL        string    `json:"url"` // origin + path
	Title      string    `json:"title"`
	Viewport   Viewport  `json:"viewport"`
	ScrollX    int       `json:"scrollX"`
	ScrollY    int       `json:"scrollY"`
	ExpiresIn  int       `json:"expiresInMs"`
	Counts     Counts    `json:"counts"`
	Elements   []Element `json:"elements,omitempty"`
	Regions    []Region  `json:"regions,omitempty"`
	Text       string    `json:"text,omitempty"`
	NextCursor string    `json:"cursor,omitempty"`
	Diff       *Diff     `json:"diff,omitempty"`
	// LeftOut says, one line each, what this page did not show.
	LeftOut []string `json:"leftOut,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	// Image is the viewport PNG at CSS pixel size when asked for.
	Image []byte `json:"-"`
	// TextForm is what the model reads.
	TextForm string `json:"-"`
}

// observation is what the Tab keeps of one Observe.
type observation struct {
	id       string
	state    pageState
	created  time.Time
	paused   time.Duration
	frozenAt time.Time
	freezes  int
	consumed bool
	invalid  bool

	elements []Element // in-viewport first, then document order
	byRef    map[string]int
	sig      map[string]string
	regions  []Region
	text     string
	textLen  int
	// droppedLines counts text lines left out because they only repeat
	// element names (the element list already says them).
	droppedLines int
	image        []byte
	clip         *proto.PageViewport
}

func (o *observation) age(now time.Time) time.Duration {
	end := now
	if o.freezes > 0 {
		end = o.frozenAt
	}
	return end.Sub(o.created) - o.paused
}

func (o *observation) freeze(now time.Time) {
	if o.freezes == 0 {
		o.frozenAt = now
	}
	o.freezes++
}

func (o *observation) thaw(now time.Time) {
	if o.freezes == 0 {
		return
	}
	o.freezes--
	if o.freezes == 0 {
		o.paused += now.Sub(o.frozenAt)
	}
}
