// Package proctest reads the machine's processes from /proc, for the
// tests that prove no Chromium or child outlives its owner. Only _test.go
// files and other test kits import it.
package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Proc is one process as /proc tells it.
type Proc struct {
	PID, PPID, PGID int
	// State is stat's one-letter state ("Z" for a zombie).
	State string
	// Args is the command line (empty for a kernel thread or a zombie).
	Args []string
}

// All lists the processes readable now. One that ends while it is read is
// left out.
func All() []Proc {
	var out []Proc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and
		// parentheses; the fields start after the last ')'.
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 {
			continue
		}
		p := Proc{PID: pid, State: f[0]}
		p.PPID, _ = strconv.Atoi(f[1])
		p.PGID, _ = strconv.Atoi(f[2])
		if cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && len(cmdline) > 0 {
			p.Args = strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		}
		out = append(out, p)
	}
	return out
}
