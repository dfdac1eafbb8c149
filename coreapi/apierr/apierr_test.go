package apierr

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
)

func TestFromOutage(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"connection refused", fmt.Errorf("store: list: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), http.StatusServiceUnavailable},
		{"pgx cannot connect", errors.New(`store: failed to connect to ` + "`host=127.0.0.1 user=postgres database=x`" + `: dial error`), http.StatusServiceUnavailable},
		{"bad connection", fmt.Errorf("query: %w", driver.ErrBadConn), http.StatusServiceUnavailable},
		{"disk full", fmt.Errorf("write: %w", syscall.ENOSPC), http.StatusServiceUnavailable},
		{"SQLite full", errors.New("store: insert case: database or disk is full (13)"), http.StatusServiceUnavailable},
		{"PostgreSQL shutting down", errors.New("store: FATAL: terminating connection due to administrator command (SQLSTATE 57P01)"), http.StatusServiceUnavailable},
		{"a bug", errors.New("store: scanning: unexpected NULL"), http.StatusInternalServerError},
		{"not found", fmt.Errorf("case x: %w", ErrNotFound), http.StatusNotFound},
	}
	for _, tc := range tests {
		e := From(tc.err)
		if e.Status != tc.want {
			t.Errorf("%s: From(%v) = %d %s; want %d", tc.name, tc.err, e.Status, e.Code, tc.want)
		}
		if e.Status == http.StatusServiceUnavailable && e.Code != CodeUnavailable {
			t.Errorf("%s: code %s; want %s", tc.name, e.Code, CodeUnavailable)
		}
	}
}
