package store_test

import (
	"context"
	"testing"

	"github.com/edgewan/edgewan/controller/store/storetest"
)

// TestSIEMCursors: the shared SIEM cursors start at 0, are kept per sink, and only move
// forward (a stream that lost the job lease mid-send cannot move one back).
func TestSIEMCursors(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			c := b.Open(t).SIEMCursors()
			steps := []struct {
				sink string
				set  int64 // 0: only read
				want int64
			}{
				{"syslog", 0, 0},
				{"syslog", 10, 10},
				{"splunk", 3, 3},
				{"syslog", 7, 10}, // backwards: ignored
				{"syslog", 12, 12},
				{"splunk", 0, 3},
			}
			for i, s := range steps {
				if s.set != 0 {
					if err := c.SetCursor(ctx, s.sink, s.set); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
				got, err := c.Cursor(ctx, s.sink)
				if err != nil || got != s.want {
					t.Errorf("step %d: cursor of %s = %d, %v; want %d", i, s.sink, got, err, s.want)
				}
			}
		})
	}
}
