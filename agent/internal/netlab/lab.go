package netlab

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Spec says what lab to build.
type Spec struct {
	Transports int // number of WAN transports, 1..4
}

// Lab is a branch site on one machine: a branch namespace, one namespace per
// WAN transport and a management link to the root namespace.
type Lab struct {
	Name   string // random prefix of every namespace and interface, e.g. "ew3fa2"
	Branch *NS    // the branch router: Name-br
	WANs   []*WAN // one per transport, WANs[i].Index == i+1

	MgmtRootIf   string     // root side of the management veth: Name-m
	MgmtBranchIf string     // branch side of the management veth: Name-mb
	MgmtRootIP   netip.Addr // on MgmtRootIf, a /30 from 198.18.250.0/24; the controller listens here
	MgmtBranchIP netip.Addr // on MgmtBranchIf, same /30

	// ProbeTarget (198.18.100.1) is on lo in every WAN namespace, like a hub
	// reachable over every transport. The branch main table has only
	// connected routes, so it is reachable only through a per-transport table.
	ProbeTarget netip.Addr

	closeOnce   sync.Once
	closeErr    error
	spaces      []*NS // every namespace created so far, for Close
	mgmtCreated bool  // MgmtRootIf is ours to delete
}

// WAN is one transport: a namespace linked to the branch by a veth pair.
type WAN struct {
	NS         *NS
	Index      int          // 1-based; the link is 198.18.Index.0/24
	BranchIf   string       // the transport's interface in the branch namespace: Name-tI
	WANIf      string       // its peer in the WAN namespace: Name-gI
	BranchAddr netip.Prefix // 198.18.Index.2/24 on BranchIf
	Gateway    netip.Addr   // 198.18.Index.1 on WANIf: the transport's next hop
	Responder  *Responder   // answers echo requests to any address of NS

	branch *NS
}

// ProbeTarget is the address on lo of every WAN namespace.
var ProbeTarget = netip.MustParseAddr("198.18.100.1")

var mgmtPool = netip.MustParsePrefix("198.18.250.0/24")

// settle bounds every wait for the kernel to apply a change (link state).
const settle = 5 * time.Second

// Available says why a lab cannot be built on this machine, or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("netlab: needs root to create network namespaces (running as uid %d)", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("netlab: the ip binary (iproute2) is missing: apt-get install -y iproute2: %w", err)
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		return fmt.Errorf("netlab: the kernel does not support network namespaces: %w", err)
	}
	return nil
}

// New builds a lab for a test and removes it when the test ends. It fails the
// test (never skips it) when the lab cannot be built, saying why.
func New(t testing.TB, s Spec) *Lab {
	t.Helper()
	l, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("netlab cleanup: %v", err)
		}
	})
	return l
}

// Build builds a lab; the caller must Close it. On error nothing is left behind.
func Build(s Spec) (*Lab, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if s.Transports < 1 || s.Transports > 4 {
		return nil, fmt.Errorf("netlab.Build: Transports = %d; want 1..4", s.Transports)
	}
	// One build at a time on the machine (across processes): choosing the
	// name and the management /30 and taking them is then atomic.
	unlock, err := lockFile("/run/lock/edgewan-netlab.lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	name, err := freeName()
	if err != nil {
		return nil, err
	}
	l := &Lab{
		Name:         name,
		MgmtRootIf:   name + "-m",
		MgmtBranchIf: name + "-mb",
		ProbeTarget:  ProbeTarget,
	}
	if err := l.build(s); err != nil {
		if cerr := l.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, fmt.Errorf("netlab.Build %s: %w", name, err)
	}
	return l, nil
}

func (l *Lab) build(s Spec) error {
	br, err := l.addNS(l.Name + "-br")
	if err != nil {
		return err
	}
	l.Branch = br
	bh, err := br.Handle()
	if err != nil {
		return err
	}
	defer bh.Close()

	for i := 1; i <= s.Transports; i++ {
		w, err := l.addWAN(bh, i)
		if err != nil {
			return err
		}
		l.WANs = append(l.WANs, w)
	}
	if err := l.addMgmt(bh); err != nil {
		return err
	}
	for _, w := range l.WANs {
		if err := waitOper(bh, w.BranchIf, true); err != nil {
			return err
		}
	}
	return waitOper(bh, l.MgmtBranchIf, true)
}

// addNS creates a namespace with lo up.
func (l *Lab) addNS(name string) (*NS, error) {
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ip netns add %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	n := newNS(name)
	l.spaces = append(l.spaces, n)
	h, err := n.Handle()
	if err != nil {
		return nil, err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: lo up: %w", name, err)
	}
	return n, nil
}

func (l *Lab) addWAN(bh *netlink.Handle, i int) (*WAN, error) {
	ns, err := l.addNS(fmt.Sprintf("%s-w%d", l.Name, i))
	if err != nil {
		return nil, err
	}
	w := &WAN{
		NS:         ns,
		Index:      i,
		BranchIf:   fmt.Sprintf("%s-t%d", l.Name, i),
		WANIf:      fmt.Sprintf("%s-g%d", l.Name, i),
		BranchAddr: netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(i), 2}), 24),
		Gateway:    netip.AddrFrom4([4]byte{198, 18, byte(i), 1}),
		branch:     l.Branch,
	}
	wh, err := ns.Handle()
	if err != nil {
		return nil, err
	}
	defer wh.Close()

	// The kernel must not answer pings: the Responder does, impaired.
	err = ns.Do(func() error {
		return os.WriteFile("/proc/sys/net/ipv4/icmp_echo_ignore_all", []byte("1\n"), 0)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: icmp_echo_ignore_all: %w", ns.Name, err)
	}
	if err := vethInto(bh, w.BranchIf, w.WANIf, ns); err != nil {
		return nil, err
	}
	if err := addrUp(bh, w.BranchIf, w.BranchAddr); err != nil {
		return nil, err
	}
	if err := addrUp(wh, w.WANIf, netip.PrefixFrom(w.Gateway, 24)); err != nil {
		return nil, err
	}
	if err := addrUp(wh, "lo", netip.PrefixFrom(ProbeTarget, 32)); err != nil {
		return nil, err
	}
	if err := waitOper(wh, w.WANIf, true); err != nil {
		return nil, err
	}
	if w.Responder, err = startResponder(ns); err != nil {
		return nil, err
	}
	return w, nil
}

// addMgmt links the root namespace to the branch with a /30 that no address
// or route of the root namespace overlaps (Build holds the lock, so labs of
// concurrent test binaries get different /30s).
func (l *Lab) addMgmt(bh *netlink.Handle) error {
	rh, err := netlink.NewHandle()
	if err != nil {
		return fmt.Errorf("root netlink: %w", err)
	}
	defer rh.Close()

	p, err := freeMgmtPrefix(rh)
	if err != nil {
		return err
	}
	l.MgmtRootIP = p.Addr().Next()
	l.MgmtBranchIP = l.MgmtRootIP.Next()
	if err := vethInto(rh, l.MgmtRootIf, l.MgmtBranchIf, l.Branch); err != nil {
		return err
	}
	l.mgmtCreated = true
	if err := addrUp(bh, l.MgmtBranchIf, netip.PrefixFrom(l.MgmtBranchIP, 30)); err != nil {
		return err
	}
	if err := addrUp(rh, l.MgmtRootIf, netip.PrefixFrom(l.MgmtRootIP, 30)); err != nil {
		return err
	}
	return waitOper(rh, l.MgmtRootIf, true)
}

func freeMgmtPrefix(rh *netlink.Handle) (netip.Prefix, error) {
	var used []netip.Prefix
	addrs, err := rh.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("root addresses: %w", err)
	}
	for _, a := range addrs {
		if p, ok := prefixOf(a.IPNet); ok {
			used = append(used, p)
		}
	}
	routes, err := rh.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: 0}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("root routes: %w", err)
	}
	for _, r := range routes {
		// A default route overlaps everything and is no conflict.
		if p, ok := prefixOf(r.Dst); ok && p.Bits() > 0 {
			used = append(used, p)
		}
	}
	n := 1 << (30 - mgmtPool.Bits())
	start := rand.IntN(n)
	base := mgmtPool.Addr().As4()
	for k := range n {
		off := (start + k) % n * 4
		c := netip.PrefixFrom(netip.AddrFrom4([4]byte{base[0], base[1], base[2], byte(off)}), 30)
		free := true
		for _, u := range used {
			if u.Overlaps(c) {
				free = false
				break
			}
		}
		if free {
			return c, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("no free /30 left in %s in the root namespace (leftover labs? see scripts/netlab.sh down)", mgmtPool)
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones).Masked(), true
}

// vethInto creates a veth pair in h's namespace, moving the peer into ns.
func vethInto(h *netlink.Handle, name, peer string, ns *NS) error {
	fd, err := netns.GetFromPath(ns.Path)
	if err != nil {
		return err
	}
	defer fd.Close()
	v := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: name},
		PeerName:      peer,
		PeerNamespace: netlink.NsFd(fd),
	}
	if err := h.LinkAdd(v); err != nil {
		return fmt.Errorf("veth %s/%s: %w", name, peer, err)
	}
	return nil
}

func addrUp(h *netlink.Handle, ifname string, p netip.Prefix) error {
	link, err := h.LinkByName(ifname)
	if err != nil {
		return fmt.Errorf("%s: %w", ifname, err)
	}
	a := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}}
	if err := h.AddrAdd(link, a); err != nil {
		return fmt.Errorf("%s: address %s: %w", ifname, p, err)
	}
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("%s: up: %w", ifname, err)
	}
	return nil
}

// waitOper waits until the kernel reports ifname operationally up (or not):
// only then are its queues active and its carrier known, so the first probe
// after a change is not lost to the change itself.
func waitOper(h *netlink.Handle, ifname string, up bool) error {
	deadline := time.Now().Add(settle)
	for {
		link, err := h.LinkByName(ifname)
		if err != nil {
			return fmt.Errorf("%s: %w", ifname, err)
		}
		state := link.Attrs().OperState
		if (state == netlink.OperUp) == up {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: still %s after %v", ifname, state, settle)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SetLink makes a hard failure of the transport (or repairs it): it sets the
// WAN side of the veth down or up, so the branch side loses or regains its
// carrier. It returns once the branch side reports the new state.
func (w *WAN) SetLink(up bool) error {
	wh, err := w.NS.Handle()
	if err != nil {
		return err
	}
	defer wh.Close()
	link, err := wh.LinkByName(w.WANIf)
	if err != nil {
		return fmt.Errorf("netlab.SetLink %s: %w", w.WANIf, err)
	}
	if up {
		err = wh.LinkSetUp(link)
	} else {
		err = wh.LinkSetDown(link)
	}
	if err != nil {
		return fmt.Errorf("netlab.SetLink %s: %w", w.WANIf, err)
	}
	bh, err := w.branch.Handle()
	if err != nil {
		return err
	}
	defer bh.Close()
	if err := waitOper(bh, w.BranchIf, up); err != nil {
		return fmt.Errorf("netlab.SetLink: %w", err)
	}
	return nil
}

// Close stops the responders and removes the management link and every
// namespace of the lab. It is safe to call more than once.
func (l *Lab) Close() error {
	l.closeOnce.Do(func() {
		var errs []error
		for _, w := range l.WANs {
			if w.Responder != nil {
				if err := w.Responder.Close(); err != nil {
					errs = append(errs, err)
				}
			}
		}
		// Deleting the root side synchronously: a namespace is destroyed
		// asynchronously, and its veths' root-side peers with it.
		if l.mgmtCreated {
			if err := delRootLink(l.MgmtRootIf); err != nil {
				errs = append(errs, err)
			}
		}
		for _, n := range l.spaces {
			if err := delNS(n.Name); err != nil {
				errs = append(errs, err)
			}
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

func delRootLink(name string) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("netlab: root link %s: %w", name, err)
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("netlab: deleting root link %s: %w", name, err)
	}
	return nil
}

func delNS(name string) error {
	if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns del %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// labName is the form of every lab name; Down refuses anything else so that
// it cannot remove namespaces that are not a lab's.
var labName = regexp.MustCompile(`^ew[0-9a-f]{4}$`)

// freeName draws a lab name that no namespace or root link uses yet, so a
// leftover of a crashed run is never touched or reused.
func freeName() (string, error) {
	for range 32 {
		name := fmt.Sprintf("ew%04x", rand.IntN(1<<16))
		if !inUse(name) {
			return name, nil
		}
	}
	return "", errors.New("netlab: no free lab name after 32 draws")
}

func inUse(name string) bool {
	if _, err := netlink.LinkByName(name + "-m"); err == nil {
		return true
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), name+"-") {
			return true
		}
	}
	return false
}

// Leftovers lists the names of labs that have a namespace or a root link on
// this machine: the live labs of other processes and those of crashed runs.
func Leftovers() []string {
	seen := map[string]bool{}
	var names []string
	add := func(s string) {
		if i := strings.IndexByte(s, '-'); i > 0 && labName.MatchString(s[:i]) && !seen[s[:i]] {
			seen[s[:i]] = true
			names = append(names, s[:i])
		}
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		add(e.Name())
	}
	links, _ := netlink.LinkList()
	for _, l := range links {
		add(l.Attrs().Name)
	}
	return names
}

// Down removes what is left of the lab called name: its root link and its
// namespaces. It is for labs whose process died; a live lab's process should
// Close it instead.
func Down(name string) error {
	if !labName.MatchString(name) {
		return fmt.Errorf("netlab.Down: %q is not a lab name (ew + 4 hex digits)", name)
	}
	errs := []error{delRootLink(name + "-m")}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), name+"-") {
			errs = append(errs, delNS(e.Name()))
		}
	}
	return errors.Join(errs...)
}
