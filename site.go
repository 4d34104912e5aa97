// Package tabwarden holds the embedded fixture site the tests and the demo
// drive; the program itself lives in cmd/tabwarden.
package tabwarden

import "embed"

// Site is testdata/site, served by browser/fixture on loopback.
//
//go:embed testdata/site
var Site embed.FS
