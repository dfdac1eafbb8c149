// Package steering is the pure SLA and path-selection logic shared by controller and agent:
// numbers in, decisions out, no I/O. (Built with the SD-WAN controller issue.)
package steering
