package server

import (
	"log/slog"
	"net/http"
	"net/http/pprof"
	"runtime"
)

// Sampling rates while --pprof is on: one blocking event per 10 µs blocked, and one in 100
// contended mutex unlocks, cheap enough to leave on while a slow phase is reproduced.
const (
	pprofBlockRate    = 10_000 // nanoseconds
	pprofMutexProfile = 100
)

// servePprof mounts Go's runtime profiles (/debug/pprof/...) on mux, the metrics listener's,
// and turns on block and mutex sampling, which are off unless asked for.
func servePprof(mux *http.ServeMux) {
	runtime.SetBlockProfileRate(pprofBlockRate)
	runtime.SetMutexProfileFraction(pprofMutexProfile)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	slog.Warn("serving runtime profiles at /debug/pprof/ on the metrics listener (--pprof): keep it on loopback")
}
