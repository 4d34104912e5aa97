// Command tabwarden is the operator's console for supervising LLM agents
// that drive a real Chromium (design.md §1). This package only parses flags,
// wires packages together and maps failures to exit codes; behaviour lives in
// consent/, policy/, tui/, browser/ and agent/.
//
// Exit codes: 0 ok, 1 runtime failure, 2 usage or invalid input, 3 the
// command's engine has not landed yet.
package main

import "os"

func main() {
	os.Exit(execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
