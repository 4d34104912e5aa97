package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newDemoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Walk the full consent journey against the embedded fixture site (not yet available)",
		Long: `demo runs a deterministic scripted agent through the reference journey
(DESIGN §10) against the embedded fixture site: no LLM, no network.

The demo agent arrives with the agent bridge issue; until then this command
does nothing and exits 3.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// No stand-in journey: a fake demo would show consent behaviour
			// the product does not have yet.
			return &exitError{code: exitNotAvailable, err: errors.New(
				"tabwarden demo is not available yet: the demo journey arrives with the agent bridge issue")}
		},
	}
}
