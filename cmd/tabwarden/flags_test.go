package main

import (
	"bytes"
	"strings"
	"testing"
)

// Flag values the console cannot honour exit with the usage code and an
// error that names the flag.
func TestInvalidFlagValuesAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--max-upload-bytes", "0"},
		{"--tools", "everything"},
		{"--mcp-session-idle", "-1s"},
		{"demo", "--mcp-session-idle", "-5m"},
		{"demo", "--consent", "thread"},
	} {
		var out, errw bytes.Buffer
		if code := execute(args, strings.NewReader(""), &out, &errw); code != exitUsage {
			t.Errorf("%v: exit code %d, want %d (usage); stderr: %s", args, code, exitUsage, errw.String())
		}
		flag := args[len(args)-2]
		if !strings.Contains(errw.String(), flag) {
			t.Errorf("%v: the error does not name %s: %s", args, flag, errw.String())
		}
	}
}
