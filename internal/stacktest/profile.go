package stacktest

import (
	"slices"

	"github.com/tabwarden/tabwarden/agent"
)

// StampProfile is the default tool surface with StampTool registered: the
// one line a new tool adds beside its own file.
var StampProfile = &agent.Profile{
	Name:         "stamp",
	Tools:        append(slices.Clone(agent.Default.Tools), StampTool),
	Instructions: agent.Default.Instructions,
}
