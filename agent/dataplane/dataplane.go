// Package dataplane applies a site's steering and QoS to the Linux data plane with netlink: a
// routing table per transport, ip rules that send each class to the table of its current path,
// and HTB classes per transport. It converges the kernel to a Plan, changing only what differs,
// and removes exactly what it added.
//
// What it owns, and therefore what Cleanup removes (nothing else is ever touched):
//   - routes with protocol Proto (238, "edgewan") in tables TableBase..TableBase+255;
//   - rules (IPv4, and IPv6 when a transport has an IPv6 gateway) with protocol Proto at
//     priorities RulePriority..RulePriority+999;
//   - root qdiscs with handle QdiscMajor: (ee:) on the transports' interfaces.
//
// Rule layout, from the lowest priority number (evaluated first):
//
//	RulePriority+i       fwmark MarkBase+i+1  lookup table of transport i   (the agent's probes)
//	RulePriority+100     lookup main suppress_prefixlength 0                 (connected and LAN routes win)
//	RulePriority+200+k   class rule k                lookup table of the class's path
//	RulePriority+999     everything else (default class) lookup table of its path
package dataplane

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/edgewan/edgewan/telemetry"
)

// Proto marks the routes and rules the agent owns (iproute2 shows it as "proto 238").
const Proto = 238

// QdiscMajor is the handle major of the agent's root HTB qdiscs (shown as "ee:").
const QdiscMajor = 0xee

// Priority offsets inside the agent's rule range.
const (
	prioProbe    = 0
	prioSuppress = 100
	prioClass    = 200
	prioDefault  = 999
	maxRules     = prioDefault - prioClass // class rules after expansion
	maxTables    = 100                     // transports (probe rules sit below prioSuppress)
)

// Options say where in the kernel's number spaces the agent lives. Zero fields take defaults.
type Options struct {
	TableBase    int    // default 7100
	RulePriority int    // default 10000
	MarkBase     uint32 // default 0x0ee00000; transport i probes with MarkBase+i+1
}

func (o *Options) defaults() {
	if o.TableBase == 0 {
		o.TableBase = 7100
	}
	if o.RulePriority == 0 {
		o.RulePriority = 10000
	}
	if o.MarkBase == 0 {
		o.MarkBase = 0x0ee00000
	}
}

// Transport is one WAN transport as the data plane sees it. Its table has an IPv4 default
// route via Gateway, an IPv6 one via Gateway6, or, with neither, an IPv4 device route (a
// point-to-point link).
type Transport struct {
	Name      string
	Interface string
	Gateway   netip.Addr // IPv4
	Gateway6  netip.Addr // IPv6
}

// ipv6 reports whether any transport carries IPv6: then rules exist in both families.
func (p *Plan) ipv6() bool {
	for _, t := range p.Transports {
		if t.Gateway6.IsValid() {
			return true
		}
	}
	return false
}

// Plan is the desired state: the transports (their order fixes their tables and marks), the
// steering rules, the current path of each class, and the QoS policy.
type Plan struct {
	Transports   []Transport
	Rules        []telemetry.MatchRule // in order; the first match wins
	DefaultClass string                // traffic no rule matches; "" sends it nowhere special
	Paths        map[string]string     // class -> transport name
	QoS          *telemetry.QoSContent // nil: no shaping
}

// Dataplane applies Plans through one netlink handle (one network namespace). It is not safe
// for concurrent use.
type Dataplane struct {
	noDSCP       bool // the kernel ignored FRA_DSCP once: DSCP rules are not installed
	testDSCPAttr int  // tests: the attribute number used for DSCP (0: FRA_DSCP)
	h            *netlink.Handle
	sockets      map[int]*nl.SocketHandle // for what the library cannot say (dscp.go)
	o            Options
}

// New returns a Dataplane working in network namespace ns (netns.None(): the current one).
func New(ns netns.NsHandle, o Options) (*Dataplane, error) {
	o.defaults()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("dataplane: netlink: %w", err)
	}
	sock, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("dataplane: netlink socket: %w", err)
	}
	return &Dataplane{h: h, o: o, sockets: map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: {Socket: sock}}}, nil
}

// Close releases the netlink sockets; what was applied stays.
func (d *Dataplane) Close() {
	d.h.Close()
	for _, s := range d.sockets {
		s.Socket.Close()
	}
}

// Table returns the routing table of the i-th transport.
func (d *Dataplane) Table(i int) int { return d.o.TableBase + i }

// Mark returns the fwmark that sends the i-th transport's probes through its table.
func (d *Dataplane) Mark(i int) uint32 { return d.o.MarkBase + uint32(i) + 1 }

// Apply converges the kernel to p. It returns how many netlink changes it made (0 when the
// kernel already matched) and the first error; on error it still applies what it can, so a
// broken QoS class does not leave the routing unapplied.
func (d *Dataplane) Apply(p Plan) (changes int, err error) {
	if len(p.Transports) > maxTables {
		return 0, fmt.Errorf("dataplane: %d transports; at most %d", len(p.Transports), maxTables)
	}
	links := make([]netlink.Link, len(p.Transports))
	var errs []error
	for i, t := range p.Transports {
		l, lerr := d.h.LinkByName(t.Interface)
		if lerr != nil {
			errs = append(errs, &TransportError{t.Name, fmt.Errorf("interface %q: %w", t.Interface, lerr)})
			continue
		}
		links[i] = l
	}
	n, rerr := d.applyRoutes(p, links)
	changes += n
	errs = append(errs, rerr)
	want, werr := d.rules(p, links)
	errs = append(errs, werr)
	n, rerr = d.applyRules(want)
	changes += n
	errs = append(errs, rerr)
	n, qerr := d.applyQoS(p, links)
	changes += n
	errs = append(errs, qerr)
	return changes, errors.Join(errs...)
}

// TransportError is a failure that leaves a transport without its table (its interface is
// missing, or its default route was refused): it cannot carry probes or traffic yet.
type TransportError struct {
	Transport string
	Err       error
}

func (e *TransportError) Error() string { return "transport " + e.Transport + ": " + e.Err.Error() }
func (e *TransportError) Unwrap() error { return e.Err }

// RuleError is a failure to add or delete a steering rule: the paths the plan names may not all
// be in effect.
type RuleError struct{ Err error }

func (e *RuleError) Error() string { return e.Err.Error() }
func (e *RuleError) Unwrap() error { return e.Err }

// Failures sorts an Apply error: the transports left without a table, and whether any rule
// failed (QoS failures are neither: routing works without shaping).
func Failures(err error) (transports map[string]bool, rules bool) {
	transports = map[string]bool{}
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
			return
		case *TransportError:
			transports[e.Transport] = true
			return
		case *RuleError:
			rules = true
			return
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
			return
		}
		walk(errors.Unwrap(err))
	}
	walk(err)
	return transports, rules
}

// Cleanup removes everything the agent owns: its routes, rules and root qdiscs.
func (d *Dataplane) Cleanup() (changes int, err error) {
	var errs []error
	n, rerr := d.applyRules(nil)
	changes += n
	errs = append(errs, rerr)
	routes, rerr := d.ourRoutes()
	errs = append(errs, rerr)
	for i := range routes {
		if e := d.h.RouteDel(&routes[i]); e != nil && !errors.Is(e, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("deleting route %v: %w", routes[i], e))
		} else {
			changes++
		}
	}
	links, lerr := d.h.LinkList()
	errs = append(errs, lerr)
	for _, l := range links {
		if q := d.ourQdisc(l); q != nil {
			if e := d.h.QdiscDel(q); e != nil {
				errs = append(errs, fmt.Errorf("deleting qdisc on %s: %w", l.Attrs().Name, e))
			} else {
				changes++
			}
		}
	}
	return changes, errors.Join(errs...)
}

// ---- routes ----------------------------------------------------------------------------------

func (d *Dataplane) ourRoutes() ([]netlink.Route, error) {
	var out []netlink.Route
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		all, err := d.h.RouteListFiltered(fam, &netlink.Route{Table: unix.RT_TABLE_UNSPEC, Protocol: Proto},
			netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
		if err != nil {
			return nil, fmt.Errorf("listing routes: %w", err)
		}
		for _, r := range all {
			if r.Table >= d.o.TableBase && r.Table < d.o.TableBase+256 {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// defaultRoutes are the routes transport t's table should hold.
func (d *Dataplane) defaultRoutes(table int, link netlink.Link, t Transport) []netlink.Route {
	v4 := netlink.Route{Table: table, Protocol: Proto, LinkIndex: link.Attrs().Index, Family: netlink.FAMILY_V4,
		Dst: &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}}
	var out []netlink.Route
	switch {
	case t.Gateway.IsValid():
		v4.Gw = net.IP(t.Gateway.AsSlice())
		out = append(out, v4)
	case !t.Gateway6.IsValid(): // no gateway at all: a point-to-point link
		v4.Scope = netlink.SCOPE_LINK
		out = append(out, v4)
	} // IPv6 only: no IPv4 route
	if t.Gateway6.IsValid() {
		out = append(out, netlink.Route{Table: table, Protocol: Proto, LinkIndex: link.Attrs().Index, Family: netlink.FAMILY_V6,
			Dst: &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}, Gw: net.IP(t.Gateway6.AsSlice())})
	}
	return out
}

func (d *Dataplane) applyRoutes(p Plan, links []netlink.Link) (int, error) {
	have, err := d.ourRoutes()
	if err != nil {
		return 0, err
	}
	changes := 0
	var errs []error
	wanted := map[int]bool{}
	for i, t := range p.Transports {
		if links[i] == nil {
			continue
		}
		table := d.Table(i)
		wanted[table] = true
		wants := d.defaultRoutes(table, links[i], t)
		for wi := range wants {
			want := &wants[wi]
			ok := false
			for _, r := range have {
				if r.Table == table && sameRoute(r, *want) {
					ok = true
				}
			}
			if ok {
				continue
			}
			if e := d.h.RouteReplace(want); e != nil {
				errs = append(errs, &TransportError{t.Name, fmt.Errorf("default route in table %d: %w", table, e)})
				continue
			}
			changes++
		}
		for j := range have { // anything else of ours in this table
			if have[j].Table != table || slices.ContainsFunc(wants, func(w netlink.Route) bool { return sameRoute(have[j], w) }) {
				continue
			}
			if e := d.h.RouteDel(&have[j]); e == nil {
				changes++
			}
		}
	}
	for j := range have { // tables of transports that are gone
		if !wanted[have[j].Table] {
			if e := d.h.RouteDel(&have[j]); e != nil && !errors.Is(e, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("deleting stale route in table %d: %w", have[j].Table, e))
			} else {
				changes++
			}
		}
	}
	return changes, errors.Join(errs...)
}

func sameRoute(a, b netlink.Route) bool {
	ones := func(n *net.IPNet) int {
		if n == nil {
			return 0
		}
		o, _ := n.Mask.Size()
		return o
	}
	fam := func(r netlink.Route) int {
		if r.Family != 0 {
			return r.Family
		}
		if r.Dst != nil && r.Dst.IP.To4() == nil {
			return netlink.FAMILY_V6
		}
		return netlink.FAMILY_V4
	}
	return fam(a) == fam(b) && a.LinkIndex == b.LinkIndex && a.Gw.Equal(b.Gw) && ones(a.Dst) == 0 && ones(b.Dst) == 0
}

// ---- rules -----------------------------------------------------------------------------------

// rules expands the plan into the rule list it needs, in priority order.
// wantRule is a rule with its DSCP match (-1: none), which netlink.Rule cannot carry.
type wantRule struct {
	*netlink.Rule
	dscp int
}

// families are the address families the plan's rules exist in.
func (p *Plan) families() []int {
	if p.ipv6() {
		return []int{netlink.FAMILY_V4, netlink.FAMILY_V6}
	}
	return []int{netlink.FAMILY_V4}
}

func (d *Dataplane) rules(p Plan, links []netlink.Link) ([]wantRule, error) {
	base := d.o.RulePriority
	var out []wantRule
	fams := p.families()
	tableOf := map[string]int{}
	for i, t := range p.Transports {
		tableOf[t.Name] = d.Table(i)
		for _, fam := range fams {
			r := d.newRule(base+prioProbe+i, d.Table(i), fam)
			r.Mark = d.Mark(i)
			mask := uint32(0xffffffff)
			r.Mask = &mask
			out = append(out, wantRule{r, -1})
		}
	}
	for _, fam := range fams {
		sup := d.newRule(base+prioSuppress, unix.RT_TABLE_MAIN, fam)
		sup.SuppressPrefixlen = 0
		out = append(out, wantRule{sup, -1})
	}

	var errs []error
	k := 0
	for ri, mr := range p.Rules {
		path, ok := p.Paths[mr.Class]
		table, known := tableOf[path]
		if !ok || !known {
			errs = append(errs, fmt.Errorf("rule %d (class %s): no usable path (%q)", ri+1, mr.Class, path))
			continue
		}
		sels, err := expand(mr)
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %d (class %s): %w", ri+1, mr.Class, err))
			continue
		}
		for _, s := range sels {
			if s.family == netlink.FAMILY_V6 && !slices.Contains(fams, netlink.FAMILY_V6) {
				continue // no transport carries IPv6: nothing to steer
			}
			if k >= maxRules {
				return out, fmt.Errorf("dataplane: the policy's rules expand to more than %d ip rules", maxRules)
			}
			for _, fam := range fams { // one priority per selector; a rule per family it applies to
				if s.family != 0 && s.family != fam {
					continue
				}
				r := d.newRule(base+prioClass+k, table, fam)
				s.apply(r, fam)
				out = append(out, wantRule{r, s.dscp})
			}
			k++
		}
	}
	if p.DefaultClass != "" {
		if table, ok := tableOf[p.Paths[p.DefaultClass]]; ok {
			for _, fam := range fams {
				out = append(out, wantRule{d.newRule(base+prioDefault, table, fam), -1})
			}
		} else {
			errs = append(errs, fmt.Errorf("default class %s: no usable path (%q)", p.DefaultClass, p.Paths[p.DefaultClass]))
		}
	}
	return out, errors.Join(errs...)
}

func (d *Dataplane) newRule(prio, table, family int) *netlink.Rule {
	r := netlink.NewRule()
	r.Family = family
	r.Priority = prio
	r.Table = table
	r.Protocol = Proto
	return r
}

// selector is one combination of a match rule's criteria: one ip rule.
type selector struct {
	family   int // of its prefixes: FAMILY_V4, FAMILY_V6, or 0 (no prefix: both)
	dscp     int // -1: any
	src, dst *net.IPNet
	proto    int
	dport    *netlink.RulePortRange
	mark     uint32
}

func (s selector) apply(r *netlink.Rule, family int) {
	r.Src, r.Dst, r.IPProto, r.Dport = s.src, s.dst, s.proto, s.dport
	if family == netlink.FAMILY_V6 && s.proto == unix.IPPROTO_ICMP {
		r.IPProto = unix.IPPROTO_ICMPV6
	}
	if s.mark != 0 {
		r.Mark = s.mark
		m := uint32(0xffffffff)
		r.Mask = &m
	}
}

var protoNums = map[string]int{"tcp": unix.IPPROTO_TCP, "udp": unix.IPPROTO_UDP, "icmp": unix.IPPROTO_ICMP}

// expand turns a match rule into ip rule selectors: the cross product of its DSCP values,
// destinations, sources and port ranges (a source and a destination of different families do
// not combine).
func expand(mr telemetry.MatchRule) ([]selector, error) {
	proto, ports := mr.Protocol, mr.Ports
	if mr.Application != "" {
		app, ok := telemetry.Applications[mr.Application]
		if !ok {
			return nil, fmt.Errorf("unknown application %q", mr.Application)
		}
		proto, ports = app.Protocol, app.Ports
	}
	prefixes := func(ps []string) ([]*net.IPNet, error) {
		if len(ps) == 0 {
			return []*net.IPNet{nil}, nil
		}
		var out []*net.IPNet
		for _, s := range ps {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("prefix %q: %w", s, err)
			}
			p = p.Masked()
			out = append(out, &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())})
		}
		return out, nil
	}
	dsts, err := prefixes(mr.Destinations)
	if err != nil {
		return nil, err
	}
	srcs, err := prefixes(mr.Sources)
	if err != nil {
		return nil, err
	}
	dscps := []int{-1}
	if len(mr.DSCP) > 0 {
		dscps = dscps[:0]
		for _, v := range mr.DSCP {
			if v < 0 || v > 63 {
				return nil, fmt.Errorf("dscp %d", v)
			}
			dscps = append(dscps, v)
		}
	}
	ranges := []*netlink.RulePortRange{nil}
	if len(ports) > 0 {
		ranges = ranges[:0]
		for _, s := range ports {
			lo, hi, err := telemetry.ParsePortRange(s)
			if err != nil {
				return nil, err
			}
			ranges = append(ranges, netlink.NewRulePortRange(lo, hi))
		}
	}
	pn := 0
	if proto != "" {
		var ok bool
		if pn, ok = protoNums[proto]; !ok {
			return nil, fmt.Errorf("protocol %q", proto)
		}
	}
	var out []selector
	for _, t := range dscps {
		for _, dst := range dsts {
			for _, src := range srcs {
				fam := 0
				for _, n := range []*net.IPNet{dst, src} {
					if n == nil {
						continue
					}
					f := netlink.FAMILY_V4
					if n.IP.To4() == nil {
						f = netlink.FAMILY_V6
					}
					if fam != 0 && fam != f {
						fam = -1
					} else if fam == 0 {
						fam = f
					}
				}
				if fam < 0 {
					continue
				}
				for _, pr := range ranges {
					out = append(out, selector{family: fam, dscp: t, src: src, dst: dst, proto: pn, dport: pr, mark: mr.FWMark})
				}
			}
		}
	}
	return out, nil
}

// ruleList lists the rules of both families.
func (d *Dataplane) ruleList() ([]netlink.Rule, error) {
	v4, err := d.h.RuleList(netlink.FAMILY_V4)
	if err != nil {
		return nil, err
	}
	v6, err := d.h.RuleList(netlink.FAMILY_V6)
	if err != nil {
		return nil, err
	}
	for i := range v4 {
		v4[i].Family = netlink.FAMILY_V4 // the library leaves it as the kernel's, which it is; be sure
	}
	for i := range v6 {
		v6[i].Family = netlink.FAMILY_V6
	}
	return append(v4, v6...), nil
}

func (d *Dataplane) ours(r *netlink.Rule) bool {
	return r.Protocol == Proto && r.Priority >= d.o.RulePriority && r.Priority < d.o.RulePriority+1000
}

// ruleKey is what makes two rules the same for convergence.
func ruleKey(r *netlink.Rule, dscp int) string {
	var b strings.Builder
	mask := uint32(0)
	if r.Mask != nil {
		mask = *r.Mask
	} else if r.Mark != 0 {
		mask = 0xffffffff
	}
	fmt.Fprintf(&b, "f%d %d t%d m%x/%x tos%d dscp%d p%d s%d", r.Family, r.Priority, r.Table, r.Mark, mask, r.Tos, dscp, r.IPProto, r.SuppressPrefixlen)
	if r.Src != nil {
		b.WriteString(" from " + r.Src.String())
	}
	if r.Dst != nil {
		b.WriteString(" to " + r.Dst.String())
	}
	if r.Dport != nil {
		fmt.Fprintf(&b, " dport %d-%d", r.Dport.Start, r.Dport.End)
	}
	return b.String()
}

// applyRules adds the wanted rules that are missing, then deletes the agent's rules that are
// not wanted (in that order, so a class moving to another table is never without a rule).
func (d *Dataplane) applyRules(want []wantRule) (int, error) {
	all, err := d.ruleList()
	if err != nil {
		return 0, fmt.Errorf("listing rules: %w", err)
	}
	dscps, err := d.dscpByPriority()
	if err != nil {
		return 0, fmt.Errorf("listing rules: %w", err)
	}
	have := map[string]*netlink.Rule{}
	for i := range all {
		if d.ours(&all[i]) {
			dscp, ok := dscps[ruleID{all[i].Family, all[i].Priority}]
			k := ruleKey(&all[i], -1)
			if ok {
				k = ruleKey(&all[i], int(dscp))
			}
			have[k] = &all[i]
		}
	}
	changes := 0
	var errs []error
	wantKeys := map[string]bool{}
	var addedDSCP []wantRule
	for _, r := range want {
		k := ruleKey(r.Rule, r.dscp)
		wantKeys[k] = true
		if have[k] != nil {
			continue
		}
		var e error
		switch {
		case r.dscp >= 0 && d.noDSCP:
			e = ErrNoDSCP // known from an earlier apply: do not install a rule that matches everything
		case r.dscp >= 0:
			if e = d.addDSCPRule(r.Rule, uint8(r.dscp)); e == nil {
				addedDSCP = append(addedDSCP, r)
			}
		default:
			e = d.h.RuleAdd(r.Rule)
		}
		if e != nil && !errors.Is(e, unix.EEXIST) {
			errs = append(errs, &RuleError{fmt.Errorf("adding rule %s: %w", k, e)})
			continue
		}
		changes++
	}
	if len(addedDSCP) > 0 { // an old kernel drops FRA_DSCP silently: the rule would match everything
		got, err := d.dscpByPriority()
		if err != nil {
			errs = append(errs, &RuleError{err})
		}
		for _, r := range addedDSCP {
			if v, ok := got[ruleID{r.Family, r.Priority}]; err == nil && (!ok || int(v) != r.dscp) {
				_ = d.h.RuleDel(r.Rule) // it matches everything: take it out at once
				d.noDSCP = true
				errs = append(errs, &RuleError{fmt.Errorf("rule %s: %w", ruleKey(r.Rule, r.dscp), ErrNoDSCP)})
			}
		}
	}
	keys := make([]string, 0, len(have))
	for k := range have {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if wantKeys[k] {
			continue
		}
		if e := d.h.RuleDel(have[k]); e != nil && !errors.Is(e, unix.ENOENT) {
			errs = append(errs, &RuleError{fmt.Errorf("deleting rule %s: %w", k, e)})
			continue
		}
		changes++
	}
	return changes, errors.Join(errs...)
}

// ---- QoS -------------------------------------------------------------------------------------

func (d *Dataplane) ourQdisc(l netlink.Link) netlink.Qdisc {
	qs, err := d.h.QdiscList(l)
	if err != nil {
		return nil
	}
	for _, q := range qs {
		a := q.Attrs()
		if a.Parent == netlink.HANDLE_ROOT && a.Handle == netlink.MakeHandle(QdiscMajor, 0) && q.Type() == "htb" {
			return q
		}
	}
	return nil
}

// htbClass is one wanted HTB class.
type htbClass struct {
	minor      uint16
	rate, ceil uint64 // bytes per second
	prio       uint32
}

// applyQoS gives each transport with a QoS entry an HTB tree: root class ee:1 at the link rate,
// a class ee:(10+k) per QoS class, u32 filters sending the classes' DSCP and prefix matches to
// them, and the default class for the rest. Transports without QoS lose the agent's qdisc.
func (d *Dataplane) applyQoS(p Plan, links []netlink.Link) (int, error) {
	changes := 0
	var errs []error
	for i, t := range p.Transports {
		if links[i] == nil {
			continue
		}
		var qt *telemetry.QoSTransport
		if p.QoS != nil {
			for j := range p.QoS.Transports {
				if p.QoS.Transports[j].Transport == t.Name {
					qt = &p.QoS.Transports[j]
				}
			}
		}
		n, err := d.applyHTB(links[i], qt, p)
		changes += n
		if err != nil {
			errs = append(errs, fmt.Errorf("transport %s: qos: %w", t.Name, err))
		}
	}
	return changes, errors.Join(errs...)
}

func (d *Dataplane) applyHTB(l netlink.Link, qt *telemetry.QoSTransport, p Plan) (int, error) {
	cur := d.ourQdisc(l)
	if qt == nil {
		if cur == nil {
			return 0, nil
		}
		return 1, d.h.QdiscDel(cur)
	}
	changes := 0
	classes := make([]htbClass, 0, len(qt.Classes)+1)
	classes = append(classes, htbClass{minor: 1, rate: kbps(qt.RateKbps), ceil: kbps(qt.RateKbps)})
	minorOf := map[string]uint16{}
	for k, c := range qt.Classes {
		m := uint16(10 + k)
		minorOf[c.Class] = m
		classes = append(classes, htbClass{minor: m, rate: kbps(c.RateKbps), ceil: kbps(c.CeilKbps), prio: uint32(c.Priority)})
	}
	defMinor := uint32(0)
	if m, ok := minorOf[p.DefaultClass]; ok {
		defMinor = uint32(m)
	}
	if cur != nil {
		if h, ok := cur.(*netlink.Htb); !ok || h.Defcls != defMinor {
			if err := d.h.QdiscDel(cur); err != nil {
				return changes, err
			}
			changes++
			cur = nil
		}
	}
	if cur == nil {
		q := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(QdiscMajor, 0), Parent: netlink.HANDLE_ROOT})
		q.Defcls = defMinor
		if err := d.h.QdiscAdd(q); err != nil {
			return changes, fmt.Errorf("adding htb qdisc: %w", err)
		}
		changes++
	}
	// classes
	have, err := d.h.ClassList(l, netlink.MakeHandle(QdiscMajor, 0))
	if err != nil {
		return changes, fmt.Errorf("listing classes: %w", err)
	}
	haveBy := map[uint16]*netlink.HtbClass{}
	for _, c := range have {
		if h, ok := c.(*netlink.HtbClass); ok {
			haveBy[uint16(h.Handle&0xffff)] = h
		}
	}
	for _, c := range classes { // parents first: ee:1 is first
		parent := netlink.MakeHandle(QdiscMajor, 1)
		if c.minor == 1 {
			parent = netlink.MakeHandle(QdiscMajor, 0)
		}
		// the kernel reports the top class's parent as root, not as the qdisc
		if h := haveBy[c.minor]; h != nil && h.Rate == c.rate && h.Ceil == c.ceil && h.Prio == c.prio &&
			(h.Parent == parent || c.minor == 1 && h.Parent == netlink.HANDLE_ROOT) {
			continue
		}
		hc := netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: l.Attrs().Index, Parent: parent, Handle: netlink.MakeHandle(QdiscMajor, c.minor)},
			netlink.HtbClassAttrs{Rate: c.rate * 8, Ceil: c.ceil * 8, Prio: c.prio})
		if err := d.h.ClassReplace(hc); err != nil {
			return changes, fmt.Errorf("class %x:%x: %w", QdiscMajor, c.minor, err)
		}
		changes++
	}
	wanted := map[uint16]bool{}
	for _, c := range classes {
		wanted[c.minor] = true
	}
	var stale []uint16
	for m := range haveBy {
		if !wanted[m] {
			stale = append(stale, m)
		}
	}
	slices.Sort(stale)
	slices.Reverse(stale) // children before parents
	// filters before classes: a class with filters pointing at it cannot be deleted
	n, ferr := d.applyFilters(l, p, minorOf)
	changes += n
	for _, m := range stale {
		if err := d.h.ClassDel(haveBy[m]); err != nil {
			return changes, fmt.Errorf("deleting class %x:%x: %w", QdiscMajor, m, err)
		}
		changes++
	}
	return changes, ferr
}

func kbps(k int64) uint64 { return uint64(k) * 1000 / 8 }

// u32 keys over the IPv4 header (no options assumed for nothing: only fixed-offset fields).
func tosKey(tos uint) netlink.TcU32Key {
	return netlink.TcU32Key{Mask: 0x00fc0000, Val: uint32(tos) << 16, Off: 0}
}

func prefixKey(p *net.IPNet, off int32) netlink.TcU32Key {
	ones, _ := p.Mask.Size()
	mask := uint32(0)
	if ones > 0 {
		mask = ^uint32(0) << (32 - ones)
	}
	ip := p.IP.To4()
	val := uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3])
	return netlink.TcU32Key{Mask: mask, Val: val & mask, Off: off}
}

func protoKey(proto int) netlink.TcU32Key {
	return netlink.TcU32Key{Mask: 0x00ff0000, Val: uint32(proto) << 16, Off: 8}
}

// filterSpec is one wanted u32 filter.
type filterSpec struct {
	prio  uint16
	minor uint16
	keys  []netlink.TcU32Key
}

func (f filterSpec) key() string {
	return fmt.Sprintf("%d>%d %v", f.prio, f.minor, f.keys)
}

// filters sends each steering rule's traffic to its class's HTB class on this transport, by the
// criteria u32 can match at fixed offsets (DSCP, protocol, prefixes); port criteria are left to
// the routing rules and do not shape.
func filters(p Plan, minorOf map[string]uint16) []filterSpec {
	var out []filterSpec
	for _, mr := range p.Rules {
		minor, ok := minorOf[mr.Class]
		if !ok {
			continue
		}
		sels, err := expand(mr)
		if err != nil {
			continue
		}
		for _, s := range sels {
			if s.family == netlink.FAMILY_V6 {
				continue // the u32 filters read IPv4 headers; IPv6 traffic takes the default class
			}
			var keys []netlink.TcU32Key
			if s.dscp >= 0 {
				keys = append(keys, tosKey(uint(s.dscp)<<2))
			}
			if s.proto != 0 {
				keys = append(keys, protoKey(s.proto))
			}
			if s.src != nil {
				keys = append(keys, prefixKey(s.src, 12))
			}
			if s.dst != nil {
				keys = append(keys, prefixKey(s.dst, 16))
			}
			if len(keys) == 0 || s.mark != 0 {
				continue // nothing u32 can see (fwmark or ports only)
			}
			out = append(out, filterSpec{prio: uint16(len(out) + 1), minor: minor, keys: keys})
			if len(out) >= 1000 {
				return out
			}
		}
	}
	return out
}

func (d *Dataplane) applyFilters(l netlink.Link, p Plan, minorOf map[string]uint16) (int, error) {
	want := filters(p, minorOf)
	parent := netlink.MakeHandle(QdiscMajor, 0)
	have, err := d.h.FilterList(l, parent)
	if err != nil {
		return 0, fmt.Errorf("listing filters: %w", err)
	}
	var haveSpecs []string
	for _, f := range have {
		u, ok := f.(*netlink.U32)
		if !ok {
			haveSpecs = append(haveSpecs, "other "+f.Type())
			continue
		}
		if u.Sel == nil || len(u.Sel.Keys) == 0 {
			continue // the hash table u32 makes per priority, not a match
		}
		haveSpecs = append(haveSpecs, filterSpec{prio: u.Priority, minor: uint16(u.ClassId & 0xffff), keys: u.Sel.Keys}.key())
	}
	wantSpecs := make([]string, len(want))
	for i, f := range want {
		wantSpecs[i] = f.key()
	}
	slices.Sort(haveSpecs)
	haveSpecs = slices.Compact(haveSpecs)
	ws := slices.Clone(wantSpecs)
	slices.Sort(ws)
	if slices.Equal(haveSpecs, ws) {
		return 0, nil
	}
	changes := 0
	if len(have) > 0 { // rebuild: u32 keeps hash tables per priority that are simplest replaced whole
		if err := d.h.FilterDel(&netlink.U32{FilterAttrs: netlink.FilterAttrs{LinkIndex: l.Attrs().Index, Parent: parent, Protocol: unix.ETH_P_IP}}); err != nil &&
			!errors.Is(err, unix.ENOENT) {
			return changes, fmt.Errorf("deleting filters: %w", err)
		}
		changes++
	}
	for _, f := range want {
		u := &netlink.U32{
			FilterAttrs: netlink.FilterAttrs{LinkIndex: l.Attrs().Index, Parent: parent, Priority: f.prio, Protocol: unix.ETH_P_IP},
			ClassId:     netlink.MakeHandle(QdiscMajor, f.minor),
			Sel:         &netlink.TcU32Sel{Flags: nl_TC_U32_TERMINAL, Keys: f.keys},
		}
		if err := d.h.FilterAdd(u); err != nil {
			return changes, fmt.Errorf("adding filter %s: %w", f.key(), err)
		}
		changes++
	}
	return changes, nil
}

// nl_TC_U32_TERMINAL is TC_U32_TERMINAL: a match ends classification.
const nl_TC_U32_TERMINAL = 1

// RuleInfo is one of the agent's rules as the kernel has it.
type RuleInfo struct {
	Family          int // netlink.FAMILY_V4 or FAMILY_V6
	Priority, Table int
	DSCP            int // -1: any
	Mark            uint32
	Src, Dst        string
	Proto           int
	Dport           string
}

// Rules lists the agent's rules in the kernel (for `agent status` and tests), by priority.
func (d *Dataplane) Rules() ([]RuleInfo, error) {
	all, err := d.ruleList()
	if err != nil {
		return nil, err
	}
	dscps, err := d.dscpByPriority()
	if err != nil {
		return nil, err
	}
	var out []RuleInfo
	for i := range all {
		r := &all[i]
		if !d.ours(r) {
			continue
		}
		ri := RuleInfo{Family: r.Family, Priority: r.Priority, Table: r.Table, DSCP: -1, Mark: r.Mark, Src: prefixOf(r.Src), Dst: prefixOf(r.Dst), Proto: r.IPProto}
		if v, ok := dscps[ruleID{r.Family, r.Priority}]; ok {
			ri.DSCP = int(v)
		}
		if r.Dport != nil {
			ri.Dport = fmt.Sprintf("%d-%d", r.Dport.Start, r.Dport.End)
		}
		out = append(out, ri)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Family != out[j].Family {
			return out[i].Family < out[j].Family
		}
		return out[i].Priority < out[j].Priority
	})
	return out, nil
}

// Owned counts what the agent owns in the kernel now: rules, routes and root qdiscs.
func (d *Dataplane) Owned() (rules, routes, qdiscs int, err error) {
	rs, err := d.Rules()
	if err != nil {
		return 0, 0, 0, err
	}
	rts, err := d.ourRoutes()
	if err != nil {
		return 0, 0, 0, err
	}
	links, err := d.h.LinkList()
	if err != nil {
		return 0, 0, 0, err
	}
	for _, l := range links {
		if d.ourQdisc(l) != nil {
			qdiscs++
		}
	}
	return len(rs), len(rts), qdiscs, nil
}
