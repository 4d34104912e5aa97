package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/tui"
	"github.com/tabwarden/tabwarden/tui/sshconsole"
)

// checkSSHFlags rejects SSH flags the console could not serve safely
// (design.md §11): --ssh-listen without a keys file, or a bad address. It
// runs for every command (validate); the keys file's content is checked
// by checkSSHKeys when the console starts, so doctor can still report it.
func (o *options) checkSSHFlags() error {
	if o.sshListen == "" {
		return nil
	}
	if o.sshKeys == "" {
		return usageErrorf("%v", sshconsole.ErrNoKeysFile)
	}
	if _, err := sshconsole.ListenAddr(o.sshListen); err != nil {
		return usageErrorf("invalid --ssh-listen '%s': %v", o.sshListen, err)
	}
	return nil
}

// checkSSHKeys rejects a keys file that is unreadable or malformed before
// the console starts anything (usage exit code).
func (o *options) checkSSHKeys() error {
	if o.sshListen == "" {
		return nil
	}
	if _, err := sshconsole.LoadKeys(o.sshKeys); err != nil {
		return usageErrorf("--ssh-authorized-keys %s: %v", o.sshKeys, err)
	}
	return nil
}

// startSSH serves the console over SSH when --ssh-listen is given; stop
// disconnects every operator and waits for their screens to end.
func startSSH(ctx context.Context, o *options, eng *consent.Engine, page tui.PageSource, proto tui.PageProtocol, notify tui.NotifyMode) (stop func(), err error) {
	if o.sshListen == "" {
		return func() {}, nil
	}
	srv, err := sshconsole.Start(ctx, eng, sshconsole.Config{
		Addr:           o.sshListen,
		AuthorizedKeys: o.sshKeys,
		Version:        version,
		Headless:       o.headless,
		Page:           page,
		PageProtocol:   proto,
		Notify:         notify,
	})
	if err != nil {
		return nil, failure(fmt.Errorf("SSH console: %w", err))
	}
	keys, _ := sshconsole.LoadKeys(o.sshKeys)
	names := ""
	if keys != nil {
		names = strings.Join(keys.Names(), ", ")
	}
	fp, err := sshconsole.HostKeyFingerprint(sshconsole.DefaultHostKeyPath())
	if err != nil {
		fp = "unknown (" + err.Error() + ")"
	}
	eng.Note("", fmt.Sprintf("SSH console on %s for %s (idle %s, at most %s per session); host key %s: operators check it on first connect",
		srv.Addr(), names, spokenDuration(sshconsole.DefaultIdleTimeout), spokenDuration(sshconsole.DefaultMaxSession), fp), !isLoopback(srv.Addr()))
	return func() { _ = srv.Close() }, nil
}

// spokenDuration is d as a person says it: "15 min", "12 h", not 15m0s.
func spokenDuration(d time.Duration) string {
	switch {
	case d > 0 && d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + " h"
	case d > 0 && d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	}
	return d.String()
}

func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// checkSSH is doctor's look at the SSH console's setup when
// --ssh-authorized-keys is given: the keys file readable and well formed,
// the host key private to you, the address one the console can bind.
func checkSSH(o *options) (check, bool) {
	if o.sshKeys == "" && o.sshListen == "" {
		return check{}, false
	}
	c := check{name: "ssh console", required: true}
	var problems, fixes []string
	if o.sshKeys == "" {
		problems = append(problems, "--ssh-listen without --ssh-authorized-keys: the console refuses to serve SSH")
		fixes = append(fixes, "--ssh-authorized-keys ~/.config/tabwarden/operators   (one `TYPE KEY NAME` line per operator)")
	} else if keys, err := sshconsole.LoadKeys(o.sshKeys); err != nil {
		problems = append(problems, err.Error())
		fixes = append(fixes, "each line: ssh-ed25519 AAAA… ana   (the comment is the operator's name; no options)")
	} else {
		c.detail = fmt.Sprintf("%s for %s", plural(keys.Len(), "key"), strings.Join(keys.Names(), ", "))
	}
	hk := sshconsole.DefaultHostKeyPath()
	if exists, err := sshconsole.CheckHostKey(hk); err != nil {
		problems = append(problems, err.Error())
		fixes = append(fixes, "chmod 600 "+shellQuote(hk))
	} else if exists {
		// ssh asks the operator to check this on first connect.
		fp, err := sshconsole.HostKeyFingerprint(hk)
		if err != nil {
			fp = err.Error()
		}
		c.detail += "; host key " + hk + " " + fp
	} else {
		c.detail += "; host key made on first use at " + hk + " (doctor shows its fingerprint once it exists; so does the console's activity log)"
	}
	if o.sshListen != "" {
		addr, err := sshconsole.ListenAddr(o.sshListen)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("--ssh-listen %q: %v", o.sshListen, err))
			fixes = append(fixes, "--ssh-listen :2222   (loopback; reach it with ssh -L or a jump host)")
		default:
			host, _, _ := net.SplitHostPort(addr)
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				c.detail += "; listens on " + addr + " (not loopback: anyone who can reach it may try a key)"
			} else {
				c.detail += "; listens on " + addr
			}
		}
	}
	if len(problems) > 0 {
		c.detail = strings.Join(problems, "; ")
		c.fixes = fixes
		return c, true
	}
	c.ok = true
	c.detail = strings.TrimPrefix(c.detail, "; ")
	return c, true
}
