package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tabwarden/tabwarden/agent/hosts"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/agent/relay"
)

func newConnectCmd(s streams) *cobra.Command {
	var (
		name, endpoint, transport string
		asJSON                    bool
	)
	cmd := &cobra.Command{
		Use:   "connect HOST",
		Short: "Print the configuration that connects an MCP host to the running console, with a fresh token",
		Long: `connect mints a named agent token on the running console and prints the
configuration that connects HOST to it, in HOST's own format, ready to paste.
HOST is one of: ` + strings.Join(hosts.Names(), ", ") + `.

--transport http prints the form that reaches the console's URL with the
token; --transport stdio the form in which the host starts the stdio relay
(` + "`tabwarden mcp-stdio`" + `), which gives each host process its own
conversation. Without it, connect prints the form that works best for HOST:
the relay for Claude Code (its HTTP is sessionless, so two claude processes
with one token would be one conversation), HTTP for the others.

The token is named after HOST (or --name); the console's screen shows it
being minted. Each token is its own agent: its conversations, tabs and grants
are its own, and every consequential step still waits for the operator.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return badUsagef("connect takes one HOST: %s", strings.Join(hosts.Names(), ", "))
			}
			if _, err := hosts.Render(args[0], hosts.Transport(transport), hosts.Target{}); err != nil {
				return badUsagef("connect: %v", err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			host := args[0]
			tokenName := name
			if tokenName == "" {
				tokenName = host
			}
			ep, _, err := relay.LocateWith(endpoint, "", relay.Hints{
				NoConsole: "start `tabwarden` first, or pass --endpoint FILE (a console's endpoint file)",
				// A token is minted with the operator secret only the
				// endpoint file holds.
				UnknownURL: "pass that console's endpoint file instead (--endpoint FILE): it holds the secret a token is minted with",
			})
			if err != nil {
				return failure(err)
			}
			tok, err := mcpserver.RequestToken(cmd.Context(), ep, tokenName)
			if err != nil {
				return failure(err)
			}
			snip, err := hosts.Render(host, hosts.Transport(transport), hosts.Target{URL: tok.URL, Token: tok.Token, Command: relayCommand()})
			if err != nil {
				return failure(err)
			}
			if asJSON {
				out := struct {
					hosts.Snippet
					Text      string `json:"text"`
					TokenName string `json:"tokenName"`
					Token     string `json:"token"`
					URL       string `json:"url"`
				}{snip, snip.Text(), tok.Name, tok.Token, tok.URL}
				enc := json.NewEncoder(s.out)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			how := "over HTTP"
			if snip.Transport == hosts.Stdio {
				how = "through the stdio relay, one conversation per " + snip.Title + " process"
			}
			fmt.Fprintf(s.out, "%s, %s:\n", snip.Title, how)
			for _, p := range snip.Parts {
				fmt.Fprintf(s.out, "\nIn %s:\n\n%s", p.Where, p.Text)
			}
			fmt.Fprintf(s.out, "\nToken %q was minted for it; it is kept, across console restarts, until revoked (tabwarden tokens revoke %s).\n", tok.Name, tok.Name)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "token name (default: HOST; a taken name gets -2, -3, …)")
	cmd.Flags().StringVar(&endpoint, "endpoint", "", "the console's endpoint file; default: search the endpoint files as mcp-stdio does")
	cmd.Flags().StringVar(&transport, "transport", "", "http or stdio (default: the form that works best for HOST)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the snippet, token and URL as JSON")
	return cmd
}

// relayCommand is how a host starts this tabwarden's stdio relay:
// "tabwarden" when that name on PATH is this program, else its absolute
// path, so a stdio configuration works as printed either way.
func relayCommand() string {
	self, err := os.Executable()
	if err != nil {
		return "tabwarden"
	}
	if onPath, err := exec.LookPath("tabwarden"); err == nil {
		a, errA := os.Stat(self)
		b, errB := os.Stat(onPath)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return "tabwarden"
		}
	}
	if abs, err := filepath.Abs(self); err == nil {
		return abs
	}
	return self
}
