package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Set with -ldflags "-X main.version=... -X main.commit=... -X main.date=..."
// (Makefile, .goreleaser.yaml).
var (
	version = "dev"
	commit  = ""
	date    = ""
)

func newVersionCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprint(s.out, versionText())
			return nil
		},
	}
}

// versionText is what `tabwarden version` and `tabwarden --version` print.
func versionText() string {
	c := commit
	if c == "" {
		c = vcsRevision()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tabwarden %s\ncommit: %s\n", version, c)
	// goreleaser stamps the zero time when git could not say.
	if date != "" && !strings.HasPrefix(date, "0001-") {
		fmt.Fprintf(&b, "built: %s\n", date)
	}
	fmt.Fprintf(&b, "go: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return b.String()
}

// vcsRevision falls back to what the Go toolchain stamped when the binary
// was built without ldflags (go install).
func vcsRevision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}
