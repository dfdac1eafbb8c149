package siem

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestFileCursors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, CursorFile)
	c, err := OpenFileCursors(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Cursor(ctx, "a"); got != 0 {
		t.Errorf("new cursor: got %d; want 0", got)
	}
	for _, set := range []struct {
		sink string
		seq  int64
	}{{"a", 5}, {"b", 7}, {"a", 9}} {
		if err := c.SetCursor(ctx, set.sink, set.seq); err != nil {
			t.Fatal(err)
		}
	}
	again, err := OpenFileCursors(path)
	if err != nil {
		t.Fatal(err)
	}
	for sink, want := range map[string]int64{"a": 9, "b": 7, "c": 0} {
		if got, _ := again.Cursor(ctx, sink); got != want {
			t.Errorf("reopened cursor %s: got %d; want %d", sink, got, want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files in the data dir: got %d; want only %s (no temporary files left)", len(entries), CursorFile)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("cursor file: got %v, %v; want mode 0600", fi.Mode(), err)
	}

	// A failed write (the directory is gone) leaves the cursor as it was.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := again.SetCursor(ctx, "a", 100); err == nil {
		t.Errorf("SetCursor with its directory gone: got nil; want an error")
	}
	if got, _ := again.Cursor(ctx, "a"); got != 9 {
		t.Errorf("cursor after a failed write: got %d; want 9", got)
	}
}

func TestOpenFileCursorsCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), CursorFile)
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFileCursors(path); err == nil {
		t.Errorf("OpenFileCursors on a corrupt file: got nil; want an error")
	}
}
