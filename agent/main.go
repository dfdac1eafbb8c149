// Command agent runs on each branch router: it probes the WAN transports, reports telemetry to
// the controller and applies the steering and QoS policies it receives.
package main

import (
	"fmt"
	"os"
)

// Version is set at build time (see Makefile).
var Version = "dev"

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "version" || os.Args[1] == "--version") {
		fmt.Println("edgewan agent", Version)
		return
	}
	fmt.Fprintln(os.Stderr, "usage: agent version\n\nagent run is not built yet: see the agent issue (probes, claim, netlink enforcement).")
	os.Exit(2)
}
