package buildinfo

import (
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	oldC, oldD := Commit, Date
	t.Cleanup(func() { Commit, Date = oldC, oldD })
	Commit, Date = "abc123", "2026-11-21T10:00:00Z"
	i := Get("1.2.0")
	if i.Version != "1.2.0" || i.Commit != "abc123" || i.Date != "2026-11-21T10:00:00Z" || !strings.HasPrefix(i.Go, "go") {
		t.Fatalf("got %+v; want the stamped version, commit and date", i)
	}
	s := i.String("controller")
	if !strings.HasPrefix(s, "edgewan controller 1.2.0 (commit abc123") || !strings.Contains(s, "built 2026-11-21T10:00:00Z") {
		t.Fatalf("got %q", s)
	}
	Commit, Date = "", ""
	if i := Get("dev"); i.Commit == "" || i.Date == "" {
		t.Fatalf("unstamped: got %+v; want a commit and date, or unknown", i)
	}
}
