package dataplane

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/edgewan/edgewan/telemetry"
)

// testNS makes a fresh network namespace with n veth pairs (tN inside, their peers pN too, both
// up, 198.18.N.2/24 on tN) and returns a netlink handle in it. Root is required: the test
// fails (not skips) without it, as the data plane cannot be tested any other way.
func testNS(t *testing.T, n int) (*netlink.Handle, string, netns.NsHandle) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("dataplane tests need root (network namespaces and netlink changes)")
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "ewdp" + hex.EncodeToString(b)
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	ns, err := netns.NewNamed(name)
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("creating namespace: %v", err)
	}
	if err := netns.Set(orig); err != nil {
		t.Fatal(err)
	}
	runtime.UnlockOSThread()
	t.Cleanup(func() {
		ns.Close()
		_ = netns.DeleteNamed(name)
		orig.Close()
	})
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	for i := 1; i <= n; i++ {
		la := netlink.NewLinkAttrs()
		la.Name = "t" + string(rune('0'+i))
		if err := h.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: "p" + string(rune('0'+i))}); err != nil {
			t.Fatal(err)
		}
		for _, ln := range []string{la.Name, "p" + string(rune('0'+i))} {
			l, err := h.LinkByName(ln)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.LinkSetUp(l); err != nil {
				t.Fatal(err)
			}
		}
		l, _ := h.LinkByName(la.Name)
		addr, _ := netlink.ParseAddr("198.18." + string(rune('0'+i)) + ".2/24")
		if err := h.AddrAdd(l, addr); err != nil {
			t.Fatal(err)
		}
		addr6, _ := netlink.ParseAddr("2001:db8:" + string(rune('0'+i)) + "::2/64")
		addr6.Flags = unix.IFA_F_NODAD // usable at once
		if err := h.AddrAdd(l, addr6); err != nil {
			t.Fatal(err)
		}
	}
	return h, name, ns
}

func newDP(t *testing.T, ns netns.NsHandle) *Dataplane {
	t.Helper()
	d, err := New(ns, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// dscpTables returns the tables of the agent's IPv4 rules matching dscp.
func dscpTables(t *testing.T, d *Dataplane, dscp uint8) []int {
	return dscpTablesOf(t, d, netlink.FAMILY_V4, dscp)
}

func dscpTablesOf(t *testing.T, d *Dataplane, family int, dscp uint8) []int {
	t.Helper()
	m, err := d.dscpByPriority()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := d.h.RuleList(family)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for i := range rules {
		if v, ok := m[ruleID{family, rules[i].Priority}]; ok && v == dscp && rules[i].Protocol == Proto {
			out = append(out, rules[i].Table)
		}
	}
	return out
}

func transports(n int) []Transport {
	var ts []Transport
	for i := 1; i <= n; i++ {
		ts = append(ts, Transport{Name: "wan" + string(rune('0'+i)), Interface: "t" + string(rune('0'+i)),
			Gateway: netip.MustParseAddr("198.18." + string(rune('0'+i)) + ".1")})
	}
	return ts
}

func basePlan() Plan {
	return Plan{
		Transports: transports(3),
		Rules: []telemetry.MatchRule{
			{Class: "voice", DSCP: []int{46}},
			{Class: "voice", Application: "sip"},
			{Class: "bulk", Destinations: []string{"198.18.200.0/24", "198.18.201.0/24"}, Protocol: "tcp", Ports: []string{"873"}},
		},
		DefaultClass: "default",
		Paths:        map[string]string{"voice": "wan1", "bulk": "wan2", "default": "wan1"},
		QoS: &telemetry.QoSContent{Transports: []telemetry.QoSTransport{{Transport: "wan1", RateKbps: 20000, Classes: []telemetry.QoSClass{
			{Class: "voice", RateKbps: 2000, CeilKbps: 4000, Priority: 0},
			{Class: "default", RateKbps: 10000, CeilKbps: 20000, Priority: 3},
		}}}},
	}
}

// snapshot is everything of the namespace's routing state the way an operator sees it.
func snapshot(t *testing.T, h *netlink.Handle) string {
	t.Helper()
	var b strings.Builder
	var rs []string
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rules, err := h.RuleList(fam)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rules {
			rules[i].Family = fam
			b.WriteString("rule " + ruleKey(&rules[i], -1) + "\n")
		}
		routes, err := h.RouteListFiltered(fam, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range routes {
			if r.Table == unix.RT_TABLE_LOCAL {
				continue
			}
			// The kernel adds each link's fe80::/64 on its own schedule (when IPv6 comes up
			// on the link, after the namespace was built): not ours, and it appeared between
			// two snapshots once (a fresh-clone run).
			if fam == netlink.FAMILY_V6 && r.Protocol == unix.RTPROT_KERNEL && r.Dst != nil && r.Dst.IP.IsLinkLocalUnicast() {
				continue
			}
			rs = append(rs, "route "+r.String())
		}
	}
	slices.Sort(rs)
	b.WriteString(strings.Join(rs, "\n"))
	links, _ := h.LinkList()
	for _, l := range links {
		qs, _ := h.QdiscList(l)
		for _, q := range qs {
			b.WriteString("\nqdisc " + l.Attrs().Name + " " + q.Type() + " " + netlink.HandleStr(q.Attrs().Handle))
		}
		cs, _ := h.ClassList(l, 0)
		for _, c := range cs {
			if hc, ok := c.(*netlink.HtbClass); ok {
				b.WriteString("\nclass " + l.Attrs().Name + " " + netlink.HandleStr(hc.Handle) + " " + hc.String())
			}
		}
	}
	return b.String()
}

func tableOf(t *testing.T, h *netlink.Handle, match func(*netlink.Rule) bool) []int {
	t.Helper()
	rules, err := h.RuleList(netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for i := range rules {
		if rules[i].Protocol == Proto && match(&rules[i]) {
			out = append(out, rules[i].Table)
		}
	}
	return out
}

func TestApplyIdempotentAndMinimal(t *testing.T) {
	h, _, ns := testNS(t, 3)
	// Something that is not the agent's: it must survive Apply and Cleanup untouched.
	foreign := netlink.NewRule()
	foreign.Priority, foreign.Table, foreign.Dst = 10500, 55, &net.IPNet{IP: net.IPv4(198, 18, 9, 0).To4(), Mask: net.CIDRMask(24, 32)}
	if err := h.RuleAdd(foreign); err != nil {
		t.Fatal(err)
	}
	l1, _ := h.LinkByName("t1")
	if err := h.RouteAdd(&netlink.Route{Table: 7105, LinkIndex: l1.Attrs().Index, Dst: &net.IPNet{IP: net.IPv4(198, 18, 77, 0).To4(), Mask: net.CIDRMask(24, 32)}}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, h)

	d := newDP(t, ns)
	p := basePlan()
	n, err := d.Apply(p)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if n == 0 {
		t.Fatal("first Apply changed nothing")
	}
	first := snapshot(t, h)
	// tables: one default route per transport
	for i, tr := range p.Transports {
		rs, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: d.Table(i)}, netlink.RT_FILTER_TABLE)
		if err != nil || len(rs) != 1 || rs[0].Gw.String() != tr.Gateway.String() || rs[0].Protocol != Proto {
			t.Fatalf("table %d: %v %v", d.Table(i), rs, err)
		}
	}
	// voice DSCP 46 -> wan1's table; sip ports -> wan1; bulk prefixes x port -> wan2; default -> wan1
	if got := dscpTables(t, d, 46); !slices.Equal(got, []int{7100}) {
		t.Fatalf("dscp rule tables %v", got)
	}
	if got := tableOf(t, h, func(r *netlink.Rule) bool { return r.Dport != nil && r.Dport.Start == 873 }); !slices.Equal(got, []int{7101, 7101}) {
		t.Fatalf("bulk rule tables %v", got)
	}
	if got := tableOf(t, h, func(r *netlink.Rule) bool { return r.Priority == 10000+prioDefault }); !slices.Equal(got, []int{7100}) {
		t.Fatalf("default rule tables %v", got)
	}
	if got := tableOf(t, h, func(r *netlink.Rule) bool { return r.Mark == d.Mark(2) }); !slices.Equal(got, []int{7102}) {
		t.Fatalf("probe mark rule %v", got)
	}
	if !strings.Contains(first, "qdisc t1 htb ee:0") || strings.Contains(first, "qdisc t2 htb ee:") {
		t.Fatalf("qdiscs:\n%s", first)
	}

	// The same plan again changes nothing.
	if n, err := d.Apply(p); err != nil || n != 0 {
		t.Fatalf("second Apply: %d changes, %v", n, err)
	}
	if again := snapshot(t, h); again != first {
		t.Fatalf("state changed on a no-op Apply:\n%s\n---\n%s", first, again)
	}

	// A new path for voice: only voice's rules move (2: DSCP and SIP ports; add + delete each).
	p.Paths = map[string]string{"voice": "wan3", "bulk": "wan2", "default": "wan1"}
	if n, err := d.Apply(p); err != nil || n != 4 {
		t.Fatalf("path change: %d changes (want 4), %v", n, err)
	}
	if got := dscpTables(t, d, 46); !slices.Equal(got, []int{7102}) {
		t.Fatalf("dscp rule after switch %v", got)
	}
	// A QoS rate change touches only that class.
	p.QoS.Transports[0].Classes[0].CeilKbps = 6000
	if n, err := d.Apply(p); err != nil || n != 1 {
		t.Fatalf("qos change: %d changes (want 1), %v", n, err)
	}
	// Dropping QoS removes the qdisc.
	p.QoS = nil
	if n, err := d.Apply(p); err != nil || n != 1 {
		t.Fatalf("qos removal: %d changes (want 1), %v", n, err)
	}

	// Cleanup leaves exactly what was there before.
	if _, err := d.Cleanup(); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if after := snapshot(t, h); after != before {
		t.Fatalf("Cleanup left a difference:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if n, err := d.Cleanup(); err != nil || n != 0 {
		t.Fatalf("second Cleanup: %d, %v", n, err)
	}
}

// A restarted agent (a new Dataplane) with a different plan converges without leftovers: the
// transport that is gone loses its table and probe rule.
func TestApplyAfterRestartRemovesStale(t *testing.T) {
	h, _, ns := testNS(t, 3)
	p := basePlan()
	if _, err := newDP(t, ns).Apply(p); err != nil {
		t.Fatal(err)
	}
	p.Transports = p.Transports[:2]
	p.Paths = map[string]string{"voice": "wan2", "bulk": "wan2", "default": "wan1"}
	d := newDP(t, ns)
	if _, err := d.Apply(p); err != nil {
		t.Fatal(err)
	}
	fresh, _, freshNS := testNS(t, 3)
	if _, err := newDP(t, freshNS).Apply(p); err != nil {
		t.Fatal(err)
	}
	if a, b := snapshot(t, h), snapshot(t, fresh); a != b {
		t.Fatalf("restarted agent's state differs from a fresh one:\n%s\n---\n%s", a, b)
	}
}

// A missing interface is an error naming it; the rest is still applied.
func TestApplyMissingInterface(t *testing.T) {
	_, _, ns := testNS(t, 2)
	p := basePlan()
	p.Transports = append(transports(2), Transport{Name: "wan3", Interface: "nosuch0", Gateway: netip.MustParseAddr("198.18.3.1")})
	p.QoS = nil
	d := newDP(t, ns)
	_, err := d.Apply(p)
	if err == nil || !strings.Contains(err.Error(), `"nosuch0"`) {
		t.Fatalf("err = %v", err)
	}
	if got := dscpTables(t, d, 46); !slices.Equal(got, []int{7100}) {
		t.Fatalf("dscp rule %v", got)
	}
}

// The rules work: a packet with DSCP 46 is routed through voice's transport, others through the
// default class's, and marked probes through their own transport.
func TestRoutingDecisions(t *testing.T) {
	_, name, ns := testNS(t, 3)
	d := newDP(t, ns)
	p := basePlan()
	p.Paths["voice"] = "wan2"
	if _, err := d.Apply(p); err != nil {
		t.Fatal(err)
	}
	if out := ipRouteGet(t, name, "198.18.100.1", "tos", "0xb8"); !strings.Contains(out, "via 198.18.2.1 dev t2") {
		t.Fatalf("dscp 46: %s", out)
	}
	if out := ipRouteGet(t, name, "198.18.100.1"); !strings.Contains(out, "via 198.18.1.1 dev t1") {
		t.Fatalf("default class: %s", out)
	}
	if out := ipRouteGet(t, name, "198.18.100.1", "mark", "0x0ee00003"); !strings.Contains(out, "via 198.18.3.1 dev t3") {
		t.Fatalf("probe mark of wan3: %s", out)
	}
	if out := ipRouteGet(t, name, "198.18.2.7"); !strings.Contains(out, "dev t2") || strings.Contains(out, "via") {
		t.Fatalf("connected route must win: %s", out)
	}
}

// ipRouteGet asks the kernel (ip route get, in h's namespace) how it would route.
func ipRouteGet(t *testing.T, ns string, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"-n", ns, "route", "get"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip route get %v: %v: %s", args, err, out)
	}
	return string(out)
}

// A dual-stack plan: IPv6 default routes in the transports' tables, and every rule in both
// families (prefix rules in theirs only); converges, and cleans up, like IPv4 alone.
func TestDualStack(t *testing.T) {
	h, name, ns := testNS(t, 3)
	before := snapshot(t, h)
	d := newDP(t, ns)
	p := basePlan()
	for i := range p.Transports {
		p.Transports[i].Gateway6 = netip.MustParseAddr("2001:db8:" + string(rune('1'+i)) + "::1")
	}
	p.Rules[2].Destinations = append(p.Rules[2].Destinations, "2001:db8:200::/48")
	p.Paths["voice"] = "wan2"
	if _, err := d.Apply(p); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if n, err := d.Apply(p); err != nil || n != 0 {
		t.Fatalf("second Apply: %d changes, %v", n, err)
	}
	get := func(args ...string) string {
		out, err := exec.Command("ip", append([]string{"-n", name, "-6", "route", "get"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip -6 route get %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	if out := get("2001:db8:100::1"); !strings.Contains(out, "via 2001:db8:1::1 dev t1") {
		t.Fatalf("default class over IPv6: %s", out)
	}
	if out := get("2001:db8:100::1", "mark", "0x0ee00003"); !strings.Contains(out, "via 2001:db8:3::1 dev t3") {
		t.Fatalf("probe mark of wan3 over IPv6: %s", out)
	}
	if out := get("2001:db8:200::5", "ipproto", "tcp", "dport", "873"); !strings.Contains(out, "via 2001:db8:2::1 dev t2") {
		t.Fatalf("bulk's IPv6 prefix: %s", out)
	}
	if out := get("2001:db8:2::7"); !strings.Contains(out, "dev t2") || strings.Contains(out, "via") {
		t.Fatalf("connected IPv6 route must win: %s", out)
	}
	if got := dscpTablesOf(t, d, netlink.FAMILY_V6, 46); !slices.Equal(got, []int{7101}) {
		t.Fatalf("IPv6 DSCP rule tables %v", got)
	}
	// the IPv4 side is as before
	if out := ipRouteGet(t, name, "198.18.100.1", "tos", "0xb8"); !strings.Contains(out, "via 198.18.2.1 dev t2") {
		t.Fatalf("IPv4 dscp 46: %s", out)
	}
	// dropping IPv6 removes exactly the IPv6 part
	for i := range p.Transports {
		p.Transports[i].Gateway6 = netip.Addr{}
	}
	if _, err := d.Apply(p); err != nil {
		t.Fatal(err)
	}
	if rs, _ := d.h.RuleList(netlink.FAMILY_V6); slices.ContainsFunc(rs, func(r netlink.Rule) bool { return r.Protocol == Proto }) {
		t.Fatal("IPv6 rules left after the plan dropped IPv6")
	}
	if _, err := d.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, h); after != before {
		t.Fatalf("Cleanup left a difference:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// On a kernel that ignores FRA_DSCP (here: an attribute number it does not know), a DSCP rule
// is refused with ErrNoDSCP and never left in place (it would match everything), and the rest
// of the plan still converges: a path change still moves the other rules.
func TestNoDSCPKernel(t *testing.T) {
	h, name, ns := testNS(t, 3)
	d := newDP(t, ns)
	d.testDSCPAttr = 31
	p := basePlan()
	p.QoS = nil
	_, err := d.Apply(p)
	if !errors.Is(err, ErrNoDSCP) {
		t.Fatalf("Apply: %v; want ErrNoDSCP", err)
	}
	if _, rules := Failures(err); !rules {
		t.Fatal("Failures does not report the rule failure")
	}
	if out := ipRouteGet(t, name, "198.18.100.1"); !strings.Contains(out, "via 198.18.1.1 dev t1") {
		t.Fatalf("default class: %s", out)
	}
	n := 0
	rs, _ := h.RuleList(netlink.FAMILY_V4)
	for _, r := range rs {
		if r.Protocol == Proto && r.Priority == 10000+prioClass {
			n++ // the DSCP rule's priority: nothing may be there (it would match everything)
		}
	}
	if n != 0 {
		t.Fatalf("%d rules left at the DSCP rule's priority", n)
	}
	p.Paths["default"] = "wan2"
	if _, err := d.Apply(p); !errors.Is(err, ErrNoDSCP) {
		t.Fatalf("second Apply: %v", err)
	}
	if out := ipRouteGet(t, name, "198.18.100.1"); !strings.Contains(out, "via 198.18.2.1 dev t2") {
		t.Fatalf("default class after the path change: %s", out)
	}
	if got := tableOf(t, h, func(r *netlink.Rule) bool { return r.Priority == 10000+prioDefault }); !slices.Equal(got, []int{7101}) {
		t.Fatalf("default rules %v: the old one must be gone", got)
	}
}
