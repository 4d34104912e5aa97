package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/hosts"
	"github.com/tabwarden/tabwarden/agent/llm"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/tui"
)

// completionShells are the shells cobra writes completion scripts for.
var completionShells = []string{"bash", "zsh", "fish", "powershell"}

// wireCompletion makes `completion SHELL` fail on a shell it has no script
// for (cobra's default prints its help and exits 0, which a dotfile would
// take for a script), and teaches the shells the values of HOST and of the
// flags that take one of a few words.
func wireCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "completion":
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 {
					return badUsagef("completion needs a shell: %s", strings.Join(completionShells, ", "))
				}
				return badUsagef("no completion for shell '%s': use %s", args[0], strings.Join(completionShells, ", "))
			}
			c.ValidArgs = completionShells
			c.Long += "\n\nThe bash script needs the bash-completion package (on Debian/Ubuntu:\napt-get install bash-completion); without it every TAB prints\n'_get_comp_words_by_ref: command not found'."
		case "connect":
			c.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return hosts.Names(), cobra.ShellCompDirectiveNoFileComp
			}
		case "run":
			words(c, "provider", llm.ProviderOpenAI, llm.ProviderAnthropic)
			words(c, "images", "on", "off")
			_ = c.RegisterFlagCompletionFunc("setup", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				setups, _ := llm.LoadSetups(llm.SetupsFile(filepath.Join(configDir(os.Getenv), "tabwarden")))
				return llm.SetupNames(setups), cobra.ShellCompDirectiveNoFileComp
			})
		}
	}
	words(root, "consent", string(consent.ProfileStrict), string(consent.ProfileThread), string(consent.ProfileTrusted))
	var views []string
	for _, p := range tui.PageProtocols {
		views = append(views, string(p))
	}
	words(root, "page-view", views...)
	words(root, "tools", agent.ProfileNames()...)
}

// words completes flag name of c with a fixed list of values.
func words(c *cobra.Command, name string, values ...string) {
	err := c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
	if err != nil {
		panic(fmt.Sprintf("completion for --%s: %v", name, err)) // a flag renamed without its completion
	}
}
