package main

import (
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// usesGlobal names the console's persistent flags each subcommand reads.
// Every command still accepts them all (a shell alias such as
// `alias tw='tabwarden --headless'` works with any command), but a
// subcommand's --help lists only the ones it uses; a flag added later is
// left out of every subcommand's help until it is named here.
var usesGlobal = map[string][]string{
	"demo":   {"review-delay", "review-timeout", "profile", "chromium", "headless", "audit", "page-view", "notify"},
	"audit":  {"audit"},
	"doctor": {"chromium", "headless", "browser-url", "browser-token", "profile", "ssh-listen", "ssh-authorized-keys"},
	"run":    {"consent", "review-delay", "review-timeout", "policy", "profile", "chromium", "headless", "browser-url", "browser-token", "mcp-listen", "mcp-session-idle", "audit", "ssh-listen", "ssh-authorized-keys", "page-view", "notify"},
}

// scopeHelp makes each subcommand's help show its own flags only.
func scopeHelp(root *cobra.Command) {
	defaultHelp := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c == root {
			defaultHelp(c, args)
			return
		}
		keep := usesGlobal[c.Name()]
		var hidden []*pflag.Flag
		root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && !slices.Contains(keep, f.Name) {
				f.Hidden = true
				hidden = append(hidden, f)
			}
		})
		defer func() {
			for _, f := range hidden {
				f.Hidden = false
			}
		}()
		defaultHelp(c, args)
	})
}
