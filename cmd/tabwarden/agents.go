package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/hosts"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/policy"
	"github.com/tabwarden/tabwarden/tui"
)

// agentSide is everything an agent reaches: the browser, the dispatch and
// the MCP server. It is started before the TUI so a launch failure prints
// its fix on a normal terminal, and closed after the TUI returns, innermost
// first, so no call outlives the browser it drives.
type agentSide struct {
	browser  *browser.Browser
	dispatch *agent.Dispatcher
	server   *mcpserver.Server
}

func startAgents(ctx context.Context, o *options, eng *consent.Engine, pol *policy.Policy, sink audit.Sink) (*agentSide, error) {
	listen, stable, err := mcpListenAddr(o.mcpListen)
	if err != nil {
		return nil, failure(err)
	}
	// A taken stable port is said before Chromium starts (a second console
	// on the same profile would otherwise hear about the profile first).
	if stable {
		if err := portFree(ctx, listen); err != nil {
			return nil, failure(err)
		}
	}
	// The flag check accepts more than the server listens on ([::1]); an
	// address the server would refuse is refused before Chromium starts.
	br, err := browser.Launch(ctx, browser.Options{
		Chromium:     o.chromium,
		ProfileDir:   o.profile,
		Headless:     o.headless,
		BrowserURL:   o.browserURL,
		BrowserToken: o.browserToken,
		// The TUI is not up yet: the terminal says the fleet queues us.
		Waiting: func(line string) { fmt.Fprintln(os.Stderr, "tabwarden: "+line+" …") },
		Gate:    eng,
		Policy:  pol,
		Logger:  slog.Default(),
	})
	if err != nil {
		return nil, failure(fmt.Errorf("browser: %w", err))
	}
	a := &agentSide{browser: br}
	a.dispatch = agent.NewDispatcher(agent.DispatcherConfig{Engine: eng, Browser: br, Policy: pol, Audit: sink, MaxUploadBytes: o.maxUpload})
	a.server, err = mcpserver.New(mcpserver.Config{
		Profile:         agent.ProfileNamed(o.tools),
		Surface:         a.dispatch,
		Engine:          eng,
		Audit:           sink,
		Listen:          listen,
		PublishEndpoint: true,
		TokenStore:      o.tokenStore,
		// 0 on the command line reads as "never"; Config spells never as
		// negative and keeps 0 for its default.
		SessionIdleTimeout: cmp.Or(o.sessionIdle, -1),
		// base64 carries 3 bytes in 4, plus the call's JSON around it.
		MaxRequestBytes: max(mcpserver.DefaultMaxRequestBytes, o.maxUpload/3*4+1<<20),
		Version:         version,
		Logger:          slog.Default(),
	})
	if err != nil {
		a.close()
		return nil, failure(fmt.Errorf("mcp server: %w", err))
	}
	url, err := a.server.Start(ctx)
	if err != nil {
		a.close()
		if stable && errors.Is(err, syscall.EADDRINUSE) {
			return nil, failure(portTaken(listen))
		}
		return nil, failure(fmt.Errorf("mcp server: %w", err))
	}
	if stable {
		if err := keepStablePort(url); err != nil {
			eng.Note("", "the MCP port could not be kept for the next start: "+err.Error(), true)
		}
	}
	info := eng.Snapshot().Info
	info.Browser = br.String()
	// SSH screens drop "; n mints another" (tui header): only the
	// console's terminal mints.
	info.Endpoint = url + " (token: default; n mints another)"
	eng.SetInfo(info)
	// Never the token itself: the activity log is on every screen, SSH ones
	// included (design.md §3: a token is shown only where it was minted).
	// Beside another console the server has said how agents reach this
	// one (its own endpoint file); the plain commands would reach the
	// other console.
	if path := a.server.EndpointPath(); path == "" || filepath.Base(path) == mcpserver.EndpointFile {
		eng.Note("", "agents connect: `tabwarden connect HOST` prints a host's configuration; n at the console's own terminal mints one; `tabwarden mcp-stdio` relays with the default token", false)
	}
	return a, nil
}

// Hosts, MintFor, Tokens and RevokeToken serve the TUI's `n` panel.
func (a *agentSide) Hosts() []string { return hosts.Names() }

func (a *agentSide) MintFor(host string) (tui.MintedToken, error) {
	tok, err := a.server.MintAtConsole(host)
	if err != nil {
		return tui.MintedToken{}, err
	}
	snip, err := hosts.Render(host, "", hosts.Target{URL: a.server.URL(), Token: tok.Secret, Command: relayCommand()})
	if err != nil {
		return tui.MintedToken{}, err
	}
	return tui.MintedToken{Name: tok.Name, Where: snip.Title + " (" + string(snip.Transport) + ")", Config: snip.Text()}, nil
}

func (a *agentSide) Tokens() []string { return a.server.Tokens() }

func (a *agentSide) RevokeToken(name string) error { return a.server.RevokeToken(name) }

func (a *agentSide) close() {
	if a.server != nil {
		a.server.Close()
	}
	if a.dispatch != nil {
		a.dispatch.Close()
	}
	if err := a.browser.Close(); err != nil {
		slog.Error("close browser", "err", err)
	}
}
