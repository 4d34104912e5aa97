package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tabwarden/tabwarden/agent/hosts"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/agent/relay"
)

func newConnectCmd(s streams) *cobra.Command {
	var (
		name, endpoint string
		asJSON         bool
	)
	cmd := &cobra.Command{
		Use:   "connect HOST",
		Short: "Print the configuration that connects an MCP host to the running console, with a fresh token",
		Long: `connect mints a named agent token on the running console and prints the
configuration that connects HOST to it, in HOST's own format, ready to paste.
HOST is one of: ` + strings.Join(hosts.Names(), ", ") + `.

The token is named after HOST (or --name); the console's screen shows it
being minted. Each token is its own agent: its conversations, tabs and grants
are its own, and every consequential step still waits for the operator.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("connect takes one HOST: %s", strings.Join(hosts.Names(), ", "))
			}
			if _, err := hosts.Render(args[0], "", ""); err != nil {
				return usageErrorf("connect: %v", err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			host := args[0]
			tokenName := name
			if tokenName == "" {
				tokenName = host
			}
			ep, _, err := relay.Locate(endpoint, "")
			if err != nil {
				return failure(err)
			}
			tok, err := mcpserver.RequestToken(cmd.Context(), ep, tokenName)
			if err != nil {
				return failure(err)
			}
			snip, err := hosts.Render(host, tok.URL, tok.Token)
			if err != nil {
				return failure(err)
			}
			if asJSON {
				out := struct {
					hosts.Snippet
					TokenName string `json:"tokenName"`
					Token     string `json:"token"`
					URL       string `json:"url"`
				}{snip, tok.Name, tok.Token, tok.URL}
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			fmt.Fprintf(s.out, "%s: put this in %s\n\n%s\n", snip.Title, snip.Where, snip.Text)
			fmt.Fprintf(s.out, "Token %q was minted for it; it is kept, across console restarts, until revoked (tabwarden tokens revoke %s).\n", tok.Name, tok.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "token name (default: HOST; a taken name gets -2, -3, …)")
	cmd.Flags().StringVar(&endpoint, "endpoint", "", "the console's endpoint file; default: search the endpoint files as mcp-stdio does")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the snippet, token and URL as JSON")
	return cmd
}
