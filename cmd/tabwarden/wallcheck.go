package main

import "github.com/tabwarden/tabwarden/browser"

// checkWall says what the console enforces below the page (issue 20): a
// launched Chromium sits behind the network wall; an attached one cannot
// be put there, which is reported (✗) but does not fail the doctor, since
// attaching is the operator's choice.
func checkWall(o *options) check {
	c := check{name: "network wall", ok: o.browserURL == ""}
	if c.ok {
		c.detail = browser.WallLaunched
		return c
	}
	c.detail = browser.WallAttached
	c.fixes = []string{"tabwarden   (without --browser-url, the console launches Chromium behind its wall)"}
	return c
}
