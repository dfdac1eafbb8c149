// Package apierr defines the API's error codes and the sentinel errors that services return,
// so that every family maps them to HTTP statuses in one place (coreapi/rest).
package apierr

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
)

// Stable error codes. They are part of the API: clients switch on them. The table in
// docs/api.md lists them with their statuses.
const (
	CodeBadRequest       = "bad_request"            // 400: malformed request (JSON, parameters)
	CodeInvalidCursor    = "invalid_cursor"         // 400: cursor not issued by this server or for another list
	CodeUnauthorized     = "unauthorized"           // 401: missing, malformed, unknown or revoked token
	CodeInvalidScope     = "invalid_scope"          // 403: valid token without the route's scope
	CodeForbidden        = "forbidden"              // 403: valid token not allowed for this resource (e.g. another project)
	CodeNotFound         = "not_found"              // 404: no such resource or route
	CodeMethodNotAllowed = "method_not_allowed"     // 405: route exists, method does not
	CodeConflict         = "conflict"               // 409: duplicate or state conflict
	CodeTooLarge         = "payload_too_large"      // 413: body over the size limit
	CodeUnsupportedMedia = "unsupported_media_type" // 415: a body that is not application/json
	CodeHeaderTooLarge   = "header_too_large"       // 431: request line and headers over the limit
	CodeUnprocessable    = "unprocessable"          // 422: well-formed but refused (validation, block rule)
	CodeBlocked          = "request_blocked"        // 422: an AI gateway block rule fired
	CodeRateLimited      = "rate_limited"           // 429
	CodeInternal         = "internal"               // 500
	CodeUnavailable      = "unavailable"            // 503: not ready, shutting down, dependency down
	CodeUpstream         = "upstream_error"         // 502: a model provider or other upstream failed
)

// Sentinel errors returned (wrapped) by stores and services.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// Error is an error with an HTTP status and a stable code; its Message is shown to the client.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// New returns an *Error with the given status, code and formatted message.
func New(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// BadRequest is a 400 bad_request.
func BadRequest(format string, args ...any) *Error {
	return New(http.StatusBadRequest, CodeBadRequest, format, args...)
}

// Invalid is a 422 unprocessable: the request parsed but its content is not acceptable.
func Invalid(format string, args ...any) *Error {
	return New(http.StatusUnprocessableEntity, CodeUnprocessable, format, args...)
}

// NotFound is a 404 naming what was not found; it also matches ErrNotFound with errors.Is.
func NotFound(format string, args ...any) *Error {
	return New(http.StatusNotFound, CodeNotFound, format, args...)
}

// Conflict is a 409.
func Conflict(format string, args ...any) *Error {
	return New(http.StatusConflict, CodeConflict, format, args...)
}

// Is lets errors.Is(e, ErrNotFound) and errors.Is(e, ErrConflict) hold for the matching statuses.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrConflict:
		return e.Status == http.StatusConflict
	}
	return false
}

// From turns any error into an *Error: an *Error in the chain is kept, the sentinels map to
// 404/409 with their wrapped message, anything else is a 500 whose detail is not shown.
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return NotFound("%s", err.Error())
	case errors.Is(err, ErrConflict):
		return Conflict("%s", err.Error())
	case outage(err):
		return New(http.StatusServiceUnavailable, CodeUnavailable, "a dependency (database or disk) is unavailable; retry with backoff")
	}
	return New(http.StatusInternalServerError, CodeInternal, "internal error; retry with backoff and quote the request_id if it persists")
}

// outage reports whether err comes from a dependency being down rather than from a bug: the
// database unreachable or the disk full. The client can do nothing but retry later, which 503
// tells it (and /readyz names the fault).
func outage(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ENOSPC) {
		return true
	}
	// The drivers' own types are not imported here: pgx's connect error and SQLite's
	// SQLITE_FULL are recognised by their stable messages.
	msg := err.Error()
	// SQLSTATE class 57P: the server shutting down or starting (admin_shutdown,
	// crash_shutdown, cannot_connect_now).
	return strings.Contains(msg, "failed to connect to") || strings.Contains(msg, "database or disk is full") ||
		strings.Contains(msg, "SQLITE_FULL") || strings.Contains(msg, "conn closed") ||
		strings.Contains(msg, "(SQLSTATE 57P0") || strings.Contains(msg, "unexpected EOF")
}
