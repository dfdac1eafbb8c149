package store

import (
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// released lists the migration versions of earlier releases, in order. goose refuses a new
// migration numbered below one a database has already applied ("missing (out-of-order)
// migration"), so an upgrade would stop at start: a new migration must be numbered above
// every version here, and is appended here when it is added.
var released = []int{1, 10, 11, 12, 20, 21, 22, 23, 24, 25, 26}

func TestMigrationsOnlyAppend(t *testing.T) {
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, e := range entries {
		n, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0])
		if err != nil {
			t.Fatalf("migration %s: no version prefix", e.Name())
		}
		got = append(got, n)
	}
	slices.Sort(got)
	if len(got) < len(released) || !slices.Equal(got[:len(released)], released) {
		t.Fatalf("migration versions %v: want the released ones %v first, unchanged, and new ones numbered above %d",
			got, released, released[len(released)-1])
	}
	for i := len(released); i < len(got); i++ {
		t.Errorf("migration %d is not in the released list: append it there (numbered above %d)", got[i], released[len(released)-1])
	}
}
