// Package scriptpath finds the repository's scripts/ (the test servers' start and stop
// scripts) from wherever a test runs: go test runs each package in its own directory.
package scriptpath

import (
	"fmt"
	"os"
	"path/filepath"
)

// Find returns the absolute path of scripts/name in the module that holds the working
// directory (the nearest directory above it with a go.mod).
func Find(name string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			p := filepath.Join(d, "scripts", name)
			if _, err := os.Stat(p); err != nil {
				return "", err
			}
			return p, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod above %s, cannot find scripts/%s", wd, name)
		}
		d = parent
	}
}
