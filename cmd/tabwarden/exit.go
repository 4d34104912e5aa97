package main

import (
	"errors"
	"fmt"
)

// Exit codes. Scripts and the Makefile rely on them, so they are part of the
// command-line contract.
const (
	exitOK      = 0
	exitFailure = 1 // runtime failure: the request was valid but could not be done
	exitUsage   = 2 // usage error or invalid input (flags, policy files, scripts)
)

// exitError carries the exit code an error maps to. Errors cobra produces
// itself (unknown command, wrong argument count) carry none and are usage
// errors; every RunE wraps its own failures explicitly.
type exitError struct {
	code int
	err  error
	// reported: the command already printed everything the operator needs
	// (e.g. every policy problem); execute only adds nothing.
	reported bool
	// usage: the command line itself was malformed; point at --help.
	usage bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// badUsagef is usageErrorf for a malformed command line: execute adds a
// pointer at the command's --help.
func badUsagef(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...), usage: true}
}

func failure(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: exitFailure, err: err}
}

func exitCodeOf(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitUsage
}

// pointAtHelp marks a usage error as a malformed command line, so execute
// adds the pointer at --help; other errors pass through unchanged.
func pointAtHelp(err error) error {
	var ee *exitError
	if errors.As(err, &ee) && ee.code == exitUsage {
		ee.usage = true
	}
	return err
}
