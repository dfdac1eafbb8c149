package siem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// CursorFile is the usual name of FileCursors' file in the data directory.
const CursorFile = "siem-cursors.json"

var _ CursorStore = (*FileCursors)(nil)

// FileCursors keeps the sinks' cursors in one small JSON file ({"sink name": seq}), replaced
// atomically (a synced temporary file renamed over it, then the directory synced) on every
// change, so a crash leaves either the old cursors or the new ones.
type FileCursors struct {
	path string

	mu sync.Mutex // guards m and the file
	m  map[string]int64
}

// OpenFileCursors reads the cursors at path; a missing file holds none.
func OpenFileCursors(path string) (*FileCursors, error) {
	c := &FileCursors{path: path, m: map[string]int64{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("siem.OpenFileCursors: %w", err)
	}
	if err := json.Unmarshal(b, &c.m); err != nil {
		return nil, fmt.Errorf("siem.OpenFileCursors: %s: %w", path, err)
	}
	if c.m == nil { // the file held null
		c.m = map[string]int64{}
	}
	return c, nil
}

// Cursor implements CursorStore.
func (c *FileCursors) Cursor(_ context.Context, sink string) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[sink], nil
}

// SetCursor implements CursorStore.
func (c *FileCursors) SetCursor(_ context.Context, sink string, seq int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, had := c.m[sink]
	c.m[sink] = seq
	if err := c.write(); err != nil {
		if had {
			c.m[sink] = old
		} else {
			delete(c.m, sink)
		}
		return fmt.Errorf("siem.SetCursor: %w", err)
	}
	return nil
}

// write replaces the file with c.m. Called with mu held.
func (c *FileCursors) write() error {
	b, err := json.MarshalIndent(c.m, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(c.path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(c.path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing left to remove
	if _, err := f.Write(append(b, '\n')); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, c.path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
