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
		{"--page-view", "png"},
		{"run", "open the fixture", "--page-view", "Kitty"},
	} {
		var out, errw bytes.Buffer
		if code := execute(args, strings.NewReader(""), &out, &errw); code != exitUsage {
			t.Errorf("%v: exit code %d, want %d (usage); stderr: %s", args, code, exitUsage, errw.String())
		}
		flag := args[len(args)-2]
		if !strings.Contains(errw.String(), flag) {
			t.Errorf("%v: the error does not name %s: %s", args, flag, errw.String())
		}
		if !strings.Contains(errw.String(), "--help' for usage.") {
			t.Errorf("%v: the error does not point at --help: %s", args, errw.String())
		}
	}
}

// Each subcommand's --help lists its own flags only; the console's --help
// still lists them all, and a console flag still parses with any command.
func TestSubcommandHelpShowsItsOwnFlags(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		want, lack []string
	}{
		{[]string{"doctor", "--help"}, []string{"--chromium", "--headless", "--browser-url", "--profile"}, []string{"--mcp-listen", "--consent", "--policy", "--audit"}},
		{[]string{"audit", "--help"}, []string{"--audit", "--json", "--since", "--conversation"}, []string{"--mcp-listen", "--headless", "--consent"}},
		{[]string{"demo", "--help"}, []string{"--headless", "--profile", "--review-delay"}, []string{"--mcp-listen", "--policy", "--browser-url"}},
		{[]string{"version", "--help"}, nil, []string{"--mcp-listen", "--headless", "Global Flags"}},
		{[]string{"mcp-stdio", "--help"}, []string{"--endpoint", "--token"}, []string{"--mcp-listen", "--headless"}},
		{[]string{"policy", "check", "--help"}, nil, []string{"--mcp-listen", "--headless"}},
		{[]string{"--help"}, []string{"--mcp-listen", "--headless", "--consent", "--policy", "--audit", "--tools"}, nil},
	} {
		r := run(t, nil, tc.args...)
		r.wantCode(t, 0)
		contains(t, strings.Join(tc.args, " "), r.stdout, tc.want...)
		lacks(t, strings.Join(tc.args, " "), r.stdout, tc.lack...)
	}
	// Hidden from help is not refused: an alias with a console flag works.
	r := run(t, nil, "--headless", "version")
	r.wantCode(t, 0)
}

// --help spells out every variable --notify-command's command gets, as the
// README does.
func TestNotifyCommandHelpNamesVariablesInFull(t *testing.T) {
	var out, errw bytes.Buffer
	if code := execute([]string{"--help"}, strings.NewReader(""), &out, &errw); code != exitOK {
		t.Fatalf("--help: exit %d: %s", code, errw.String())
	}
	for _, v := range []string{"TABWARDEN_REVIEW_TITLE", "TABWARDEN_REVIEW_KIND", "TABWARDEN_CONVERSATION", "TABWARDEN_ORIGIN", "TABWARDEN_PENDING"} {
		if !strings.Contains(out.String(), v) {
			t.Errorf("--help lacks %s:\n%s", v, out.String())
		}
	}
	if strings.Contains(out.String(), " _KIND") {
		t.Errorf("--help abbreviates a variable:\n%s", out.String())
	}
}
