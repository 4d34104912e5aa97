package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tabwarden/tabwarden/policy"
)

func newPolicyCmd(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Managed policy tools",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "check FILE...",
		Short: "Validate policy files and print the merged policy",
		Long: `check validates each managed policy file (JSON or YAML) and prints the policy
the console would enforce with all of them: browserOrigins intersected,
blockBrowserUploads OR-ed, the strictest consentFloor. Every problem in every
file is printed to stderr and the command exits 2.

A policy file holds one object, execution:

  execution:
    browserOrigins: [https://intranet.example]   # the only sites, [] none
    blockBrowserUploads: true                    # no file uploads
    consentFloor: thread                         # a looser --consent is lowered to it

docs/policy.md describes each key.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return badUsagef("policy check needs at least one policy FILE (JSON or YAML)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := policy.CheckFiles(args)
			var ve *policy.ValidationError
			if errors.As(err, &ve) {
				for _, pr := range ve.Problems {
					fmt.Fprintln(s.err, pr.String())
				}
				return &exitError{code: exitUsage, reported: true,
					err: fmt.Errorf("policy check: %d problem(s)", len(ve.Problems))}
			}
			if err != nil {
				return failure(fmt.Errorf("policy check: %w", err))
			}
			fmt.Fprint(s.out, p.Format())
			return nil
		},
	})
	return cmd
}
