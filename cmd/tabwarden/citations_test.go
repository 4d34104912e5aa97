package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// designCitation is a citation of the contract, "design.md §4" or
// "docs/design.md §3, §4" or "design.md §3/§1", also when a Go comment
// wraps it ("design.md\n// §12").
var designCitation = regexp.MustCompile(`design\.md(?:\s|//|#)*§\d+(?:\s*(?:,|/|and)\s*§\d+)*`)

// TestDesignCitationsResolve: every "design.md §N" in the code, scripts and
// docs names a section docs/design.md has, so a reader who follows a
// citation finds the promise it points at.
func TestDesignCitationsResolve(t *testing.T) {
	repo := filepath.Join("..", "..")
	design, err := os.ReadFile(filepath.Join(repo, "docs", "design.md"))
	if err != nil {
		t.Fatalf("the contract: %v", err)
	}
	sections := map[int]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\d+)\. `).FindAllStringSubmatch(string(design), -1) {
		n, _ := strconv.Atoi(m[1])
		sections[n] = true
	}
	for n := 1; n <= 14; n++ {
		if !sections[n] {
			t.Errorf("docs/design.md has no section %d; code and docs cite §1 to §14", n)
		}
	}
	texts := map[string]bool{".go": true, ".md": true, ".sh": true, ".json": true, ".html": true,
		".js": true, ".mjs": true, ".txtar": true, ".yaml": true, ".yml": true}
	cited := 0
	err = filepath.WalkDir(repo, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !texts[filepath.Ext(path)] {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, c := range designCitation.FindAllString(string(b), -1) {
			cited++
			for _, m := range regexp.MustCompile(`§(\d+)`).FindAllStringSubmatch(c, -1) {
				n, _ := strconv.Atoi(m[1])
				if !sections[n] {
					rel, _ := filepath.Rel(repo, path)
					t.Errorf("%s cites %q: docs/design.md has no section %d", rel, strings.Join(strings.Fields(c), " "), n)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited < 100 {
		t.Errorf("found %d citations of design.md; the code cites it far more often, so the walk missed files", cited)
	}
}
