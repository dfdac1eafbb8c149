// Package docs holds the project's documentation; its test checks what a clone's first reader
// relies on: the Go version the README asks for is go.mod's, every relative link in the
// Markdown resolves inside the repository, and nothing points outside it.
package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestREADMEGoVersion: the README's "Go X or newer" is go.mod's go directive (issue 12: it
// said 1.26+ while go.mod needed 1.26.8).
func TestREADMEGoVersion(t *testing.T) {
	root := repoRoot(t)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	want := string(m[1])
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	got := regexp.MustCompile(`Go (1\.[0-9.]+\+?)`).FindAllSubmatch(readme, -1)
	if len(got) == 0 {
		t.Fatal("the README names no Go version")
	}
	for _, g := range got {
		if string(g[1]) != want {
			t.Errorf("the README says Go %s; go.mod needs %s", g[1], want)
		}
	}
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestMarkdownLinks: every relative link of every tracked Markdown file resolves to a tracked
// file or directory of the repository (a clone has nothing else: issue 12's README linked the
// spec in the build machine's shared directory), and no tracked file names that directory.
func TestMarkdownLinks(t *testing.T) {
	root := repoRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	files := strings.Fields(string(out))
	tracked := map[string]bool{}
	for _, f := range files {
		tracked[f] = true
		for d := filepath.Dir(f); d != "."; d = filepath.Dir(d) {
			tracked[d] = true
		}
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the work tree
		}
		if strings.Contains(string(b), "/work/"+"shared") || strings.Contains(string(b), "../"+"shared/") {
			t.Errorf("%s points outside the repository (the build machine's shared directory)", f)
		}
		if !strings.HasSuffix(f, ".md") {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "#") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			link, _, _ = strings.Cut(link, "#")
			target := filepath.Clean(filepath.Join(filepath.Dir(f), link))
			checked++
			if strings.HasPrefix(target, "..") || !tracked[filepath.ToSlash(target)] {
				t.Errorf("%s links %s, which is not in the repository", f, m[1])
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found: the test reads nothing")
	}
	if !tracked["docs/spec/platform-api.md"] {
		t.Error("the repository carries no copy of the platform API it implements (docs/spec/platform-api.md)")
	}
}
