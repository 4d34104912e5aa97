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
			c := commit
			if c == "" {
				c = vcsRevision()
			}
			fmt.Fprintf(s.out, "tabwarden %s\ncommit: %s\n", version, c)
			// goreleaser stamps the zero time when git could not say.
			if date != "" && !strings.HasPrefix(date, "0001-") {
				fmt.Fprintf(s.out, "built: %s\n", date)
			}
			fmt.Fprintf(s.out, "go: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
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
