package agent

import "github.com/tabwarden/tabwarden/consent"

// withGrant names, in a step's result, the scoped grant that let it run
// without a review (design.md §4), so the agent and its person can tell a
// step the operator answered from one a grant covered.
func withGrant(fields map[string]any, pass consent.Pass) map[string]any {
	if pass.Grant != "" {
		fields["grant"] = pass.Grant
	}
	return fields
}
