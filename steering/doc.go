// Package steering is the pure SLA and path-selection logic shared by controller and agent:
// numbers in, decisions out, no I/O, no goroutines, no clock (time is passed in).
//
// A Site holds, for one site, the state of each transport, of each (transport, class) pair and
// of each class. Feed it one window per transport with Observe, then call Evaluate to get the
// status changes and path switches (Decisions) to act on and report. README.md describes the
// model, the options, the score, the damping and the bounds the tests prove.
package steering
