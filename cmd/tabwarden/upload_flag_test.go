package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestMaxUploadBytesMustBePositive(t *testing.T) {
	var out, errw bytes.Buffer
	if code := execute([]string{"--max-upload-bytes", "0"}, strings.NewReader(""), &out, &errw); code != exitUsage {
		t.Fatalf("exit code %d, want %d (usage); stderr: %s", code, exitUsage, errw.String())
	}
	if !strings.Contains(errw.String(), "--max-upload-bytes") {
		t.Errorf("the error does not name the flag: %s", errw.String())
	}
}

func TestToolsFlagTakesDefaultOrWebUse(t *testing.T) {
	var out, errw bytes.Buffer
	if code := execute([]string{"--tools", "everything"}, strings.NewReader(""), &out, &errw); code != exitUsage {
		t.Fatalf("exit code %d, want %d (usage); stderr: %s", code, exitUsage, errw.String())
	}
	if !strings.Contains(errw.String(), "--tools") {
		t.Errorf("the error does not name the flag: %s", errw.String())
	}
}
