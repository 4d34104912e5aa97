package tui

import "charm.land/lipgloss/v2"

// styles are applied to lines after they are laid out in plain text, so
// widths never depend on styling and a no-colour terminal loses nothing but
// colour: every state also has a textual marker.
type styles struct {
	title    lipgloss.Style
	rule     lipgloss.Style
	review   lipgloss.Style
	origin   lipgloss.Style
	selected lipgloss.Style
	dim      lipgloss.Style
	warn     lipgloss.Style
	banner   lipgloss.Style
	flash    lipgloss.Style
	keys     lipgloss.Style
}

func defaultStyles() styles {
	return styles{
		title:    lipgloss.NewStyle().Bold(true),
		rule:     lipgloss.NewStyle().Foreground(lipgloss.Color("8")),
		review:   lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("11")),
		origin:   lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("14")),
		selected: lipgloss.NewStyle().Reverse(true),
		dim:      lipgloss.NewStyle().Foreground(lipgloss.Color("8")),
		warn:     lipgloss.NewStyle().Foreground(lipgloss.Color("9")),
		banner:   lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("0")).Background(lipgloss.Color("11")),
		flash:    lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("13")),
		keys:     lipgloss.NewStyle().Bold(true),
	}
}
