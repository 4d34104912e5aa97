package main

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tabwarden/tabwarden/agent/demo"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/tui"
)

func squashSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// demoScreen renders the real TUI over an engine in the demo's shape (its
// three conversations and the tabs the journey has open at that point:
// the popup from step popup on, the policy run's tab from policy-upload
// on) after the notes, at w×h, with the demo agent paused when paused is
// set.
func demoScreen(t *testing.T, w, h int, popup, policyTab, paused bool, notes ...string) string {
	t.Helper()
	eng := consent.New(consent.Config{})
	t.Cleanup(eng.Close)
	addDemoConversations(eng)
	eng.PutTab(consent.TabInfo{ID: "tab_7dc7b76391", Conversation: demoConv, URL: "http://127.0.0.1:37881/popup.html?to=/link.html", Title: "Popup opener"})
	if popup {
		eng.PutTab(consent.TabInfo{ID: "tab_7679ef67ea", Conversation: demoConv, URL: "http://127.0.0.1:37881/link.html", Title: "Link"})
	}
	if policyTab {
		eng.PutTab(consent.TabInfo{ID: "tab_30b2a12284", Conversation: demoPolicyConv, URL: "about:blank"})
	}
	eng.PutTab(consent.TabInfo{ID: "tab_be25227611", URL: "about:blank"})
	eng.PutTab(consent.TabInfo{ID: "tab_407ac3901d", URL: "about:blank"})
	if paused {
		if err := eng.TakeOver(demoConv); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range notes {
		eng.Note(demoConv, n, false)
	}
	m := tui.New(eng, tui.Options{Version: "test"})
	defer m.Close()
	tm, _ := m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return ansi.Strip(tm.(tui.Model).View().Content)
}

// TestDemoNarrationReadableOnScreen: a newcomer follows the screen alone,
// so every step's narration, as the demo writes it, is on the real screen
// word for word at 80×24 and at 120×40 while it is the newest entry; and
// when the console's "review asked" line follows it, what to press ("You:
// …") still is.
func TestDemoNarrationReadableOnScreen(t *testing.T) {
	steps := demo.Journey()
	at := map[string]int{}
	for i, s := range steps {
		at[s.Name] = i
	}
	for _, size := range [][2]int{{80, 24}, {120, 40}} {
		for i, s := range steps {
			for _, says := range []string{s.Says, s.Headless} {
				if says == "" {
					continue
				}
				text := fmt.Sprintf("Step %d/%d: %s", i+1, len(steps), says)
				paused := s.Name == "await-resume"
				popup, policyTab := i >= at["popup"], i >= at["policy-upload"]
				scr := demoScreen(t, size[0], size[1], popup, policyTab, paused, "→ ok: earlier result", text)
				if !strings.Contains(squashSpace(scr), squashSpace(text)) {
					t.Errorf("%dx%d step %s: the narration is not on screen whole:\n%s", size[0], size[1], s.Name, scr)
				}
				_, you, ok := strings.Cut(says, "You: ")
				if !ok {
					continue
				}
				scr = demoScreen(t, size[0], size[1], popup, policyTab, paused, text, "review asked: navigation http://127.0.0.1:37881 (tab tab_7679ef67ea)")
				if !strings.Contains(squashSpace(scr), squashSpace(you)) {
					t.Errorf("%dx%d step %s: what to press is not on screen under a review line:\n%s", size[0], size[1], s.Name, scr)
				}
			}
		}
	}
}
