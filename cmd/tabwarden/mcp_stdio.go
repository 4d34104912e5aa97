package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/tabwarden/tabwarden/agent/hosts"
	"github.com/tabwarden/tabwarden/agent/relay"
)

func newMCPStdioCmd(s streams) *cobra.Command {
	var endpoint, token string
	cmd := &cobra.Command{
		Use:   "mcp-stdio",
		Short: "Relay MCP over stdio to the running console (for hosts that only speak stdio)",
		Long: `mcp-stdio connects an MCP host that only speaks stdio to the running
tabwarden console and forwards every message unchanged; the console still
asks the operator before every consequential step.

It finds the console through the endpoint file (mcp.json) the console
publishes, looking in order in $XDG_RUNTIME_DIR/tabwarden, /run/user/UID/tabwarden,
$HOME/.local/state/tabwarden/run and $TMPDIR/tabwarden-UID, so it works when
the host passes it only HOME and PATH. --endpoint names the file or the
console's URL instead.

The agent token comes from --token, else $TABWARDEN_TOKEN (the stdio forms
` + "`tabwarden connect`" + ` prints set it in the host's configuration), else the
endpoint file's default token.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if token == "" {
				token = os.Getenv(hosts.TokenEnv)
			}
			ep, _, err := relay.Locate(endpoint, token)
			if err != nil {
				return failure(err)
			}
			if err := relay.RunEndpoint(cmd.Context(), ep, s.in, s.out); err != nil {
				return failure(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&endpoint, "endpoint", "", "the console's endpoint file (FILE) or MCP URL (http://127.0.0.1:PORT/mcp); default: search the endpoint files")
	cmd.Flags().StringVar(&token, "token", "", "agent token to use instead of $TABWARDEN_TOKEN or the endpoint file's (needed with a URL no endpoint file names)")
	return cmd
}
