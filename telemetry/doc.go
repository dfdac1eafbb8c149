// Package telemetry defines the wire schema agents and controller share, window statistics and
// the time-series sinks. (Built with the SD-WAN controller issue.)
package telemetry
