package main

import (
	"github.com/spf13/cobra"

	"github.com/tabwarden/tabwarden/agent/relay"
)

func newMCPStdioCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp-stdio",
		Short: "Relay MCP over stdio to the running console (for hosts that only speak stdio)",
		Long: `mcp-stdio connects an MCP host that only speaks stdio to the running
tabwarden console. It reads the console's endpoint file (mcp.json in
$XDG_RUNTIME_DIR/tabwarden) and forwards every message unchanged; the
console still asks the operator before every consequential step.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := relay.Run(cmd.Context(), s.in, s.out); err != nil {
				return failure(err)
			}
			return nil
		},
	}
}
