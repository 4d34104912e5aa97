package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tabwarden/tabwarden/agent/mcpserver"
)

// `tabwarden tokens` reads and edits the token store directly: it works
// with no console running, and a running console re-reads the store within
// a second, ending a revoked token's conversations (mcpserver/tokenstore.go).
func newTokensCmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tokens",
		Short: "List or revoke the named agent tokens kept for this user",
		Long: `Named agent tokens (minted by ` + "`tabwarden connect`" + ` or n in the console)
are kept, as their SHA-256 only, in ` + "$XDG_STATE_HOME/tabwarden/tokens.json" + ` until
revoked, so a host configured once keeps working after the console restarts.
The default token is minted at each start and is not kept.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the kept tokens: name and when each was minted (never the token)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			kept, err := mcpserver.ReadTokens(mcpserver.TokenStorePath())
			if err != nil {
				return failure(err)
			}
			if len(kept) == 0 {
				fmt.Fprintln(s.out, "no kept agent tokens (tabwarden connect HOST mints one)")
				return nil
			}
			w := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tMINTED")
			for _, k := range kept {
				fmt.Fprintf(w, "%s\t%s\n", k.Name, k.Created.Local().Format(time.DateTime))
			}
			return w.Flush()
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a kept token: it stops working at once, in every console, for good",
		// TAB offers the kept tokens' names (the store holds only names and
		// hashes), never file names.
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			kept, _ := mcpserver.ReadTokens(mcpserver.TokenStorePath())
			names := make([]string, 0, len(kept))
			for _, k := range kept {
				names = append(names, k.Name)
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return badUsagef("tokens revoke takes one NAME (tabwarden tokens list shows them)")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			err := mcpserver.RevokeStoredToken(mcpserver.TokenStorePath(), args[0])
			if errors.Is(err, mcpserver.ErrUnknownToken) {
				return failure(fmt.Errorf("no kept agent token named %q (tabwarden tokens list shows them)", args[0]))
			}
			if err != nil {
				return failure(err)
			}
			fmt.Fprintf(s.out, "revoked %s; a running console ends its conversations within a second\n", args[0])
			return nil
		},
	})
	return cmd
}
