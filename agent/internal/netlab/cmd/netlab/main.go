// Command netlab builds a network-namespace lab that stays up until
// interrupted, or removes one left over by a crashed run.
//
//	netlab up [-transports N]
//	netlab down NAME
//	netlab list
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/edgewan/edgewan/agent/internal/netlab"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "up":
		fs := flag.NewFlagSet("up", flag.ExitOnError)
		n := fs.Int("transports", 2, "number of WAN transports, 1..4")
		fs.Parse(os.Args[2:])
		err = up(*n)
	case "down":
		if len(os.Args) != 3 {
			usage()
		}
		err = netlab.Down(os.Args[2])
	case "list":
		for _, name := range netlab.Leftovers() {
			fmt.Println(name)
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "netlab:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: netlab up [-transports N] | netlab down NAME | netlab list")
	os.Exit(2)
}

func up(transports int) error {
	// Subscribe before building, so a Ctrl-C during the build still cleans up.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)

	lab, err := netlab.Build(netlab.Spec{Transports: transports})
	if err != nil {
		return err
	}
	fmt.Printf("lab %s\n", lab.Name)
	fmt.Printf("  branch      %s  (ip netns exec %s ...)\n", lab.Branch.Name, lab.Branch.Name)
	fmt.Printf("  management  root %s %s  <->  branch %s %s\n", lab.MgmtRootIf, lab.MgmtRootIP, lab.MgmtBranchIf, lab.MgmtBranchIP)
	fmt.Printf("  probe       %s on lo in every WAN namespace\n", lab.ProbeTarget)
	for _, w := range lab.WANs {
		fmt.Printf("  transport %d %s %s  gateway %s  (ns %s)\n", w.Index, w.BranchIf, w.BranchAddr, w.Gateway, w.NS.Name)
	}
	fmt.Println("Ctrl-C removes it.")

	<-sig
	for _, w := range lab.WANs {
		st := w.Responder.Stats()
		fmt.Printf("transport %d responder: %d requests, %d replies, %d dropped\n", w.Index, st.Requests, st.Replies, st.Dropped)
	}
	return lab.Close()
}
