// Package buildinfo holds the commit and build date stamped into release binaries (see the
// Makefile's release target), with the Go toolchain's own VCS stamp as the fallback.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set at build time with -ldflags "-X github.com/edgewan/edgewan/buildinfo.Commit=... -X ...Date=...".
var (
	Commit = "" // the git commit; empty: from the toolchain's VCS stamp, if any
	Date   = "" // the build time, RFC 3339 UTC; empty: the commit's time, if known
)

// Info is what a binary reports about its build.
type Info struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Date    string `json:"date"`
	Go      string `json:"go"`
	Dirty   bool   `json:"dirty,omitempty"` // built from a tree with uncommitted changes
}

// Get returns the build information of a binary whose own version is version.
func Get(version string) Info {
	i := Info{Version: version, Commit: Commit, Date: Date, Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if i.Commit == "" {
					i.Commit = s.Value
				}
			case "vcs.time":
				if i.Date == "" {
					i.Date = s.Value
				}
			case "vcs.modified":
				i.Dirty = s.Value == "true"
			}
		}
	}
	if i.Commit == "" {
		i.Commit = "unknown"
	}
	if i.Date == "" {
		i.Date = "unknown"
	}
	return i
}

// String formats the information for a version command: "edgewan controller 1.2.0 (commit
// 3f2a..., built 2026-11-21T10:00:00Z, go1.26.8 linux/amd64)".
func (i Info) String(binary string) string {
	c := i.Commit
	if i.Dirty {
		c += "-dirty"
	}
	return "edgewan " + binary + " " + i.Version + " (commit " + c + ", built " + i.Date + ", " + i.Go + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}
