package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// IPv4 rules cannot match a full DSCP with the header's tos field (the kernel accepts only the
// old TOS bits there), and vishvananda/netlink does not know the FRA_DSCP attribute that
// newer kernels added for it. DSCP rules are therefore built and read here, on the same
// netlink socket family; everything else goes through the library.
const (
	fraDSCP      = 25 // FRA_DSCP: u8, the DSCP value (0..63)
	frActToTable = 1  // FR_ACT_TO_TBL
)

// dscpAttr is FRA_DSCP; tests of the old-kernel path use an attribute the kernel ignores.
func (d *Dataplane) dscpAttr() int {
	if d.testDSCPAttr != 0 {
		return d.testDSCPAttr
	}
	return fraDSCP
}

// ErrNoDSCP says the kernel ignored FRA_DSCP: it is too old to steer by DSCP.
var ErrNoDSCP = errors.New("this kernel cannot match DSCP in ip rules (FRA_DSCP, a newer Linux)")

// addDSCPRule adds rule r with a DSCP match, like `ip rule add dscp N ...`.
func (d *Dataplane) addDSCPRule(r *netlink.Rule, dscp uint8) error {
	req := nl.NewNetlinkRequest(unix.RTM_NEWRULE, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	hdr := make([]byte, 12) // struct fib_rule_hdr
	hdr[0] = byte(r.Family)
	hdr[4] = unix.RT_TABLE_UNSPEC
	hdr[7] = frActToTable
	put := func(typ int, b []byte) { req.AddData(nl.NewRtAttr(typ, b)) }
	u32 := func(v uint32) []byte { b := make([]byte, 4); binary.NativeEndian.PutUint32(b, v); return b }
	if r.Dst != nil {
		ones, _ := r.Dst.Mask.Size()
		hdr[1] = uint8(ones)
	}
	if r.Src != nil {
		ones, _ := r.Src.Mask.Size()
		hdr[2] = uint8(ones)
	}
	req.AddData(rawData(hdr)) // the header comes before the attributes
	addr := func(ip net.IP) []byte {
		if r.Family == unix.AF_INET {
			return ip.To4()
		}
		return ip.To16()
	}
	if r.Dst != nil {
		put(nl.FRA_DST, addr(r.Dst.IP))
	}
	if r.Src != nil {
		put(nl.FRA_SRC, addr(r.Src.IP))
	}
	put(nl.FRA_PRIORITY, u32(uint32(r.Priority)))
	put(nl.FRA_TABLE, u32(uint32(r.Table)))
	put(nl.FRA_PROTOCOL, []byte{r.Protocol})
	if r.Mark != 0 {
		put(nl.FRA_FWMARK, u32(r.Mark))
		mask := uint32(0xffffffff)
		if r.Mask != nil {
			mask = *r.Mask
		}
		put(nl.FRA_FWMASK, u32(mask))
	}
	if r.IPProto > 0 {
		put(nl.FRA_IP_PROTO, []byte{uint8(r.IPProto)})
	}
	if r.Dport != nil {
		b := make([]byte, 4)
		binary.NativeEndian.PutUint16(b, r.Dport.Start)
		binary.NativeEndian.PutUint16(b[2:], r.Dport.End)
		put(nl.FRA_DPORT_RANGE, b)
	}
	put(d.dscpAttr(), []byte{dscp})
	req.Sockets = d.sockets
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

// ruleID names a rule among the agent's: its family and priority (unique per family).
type ruleID struct{ family, priority int }

// dscpByPriority reads the DSCP match of every rule that has one, in both families.
func (d *Dataplane) dscpByPriority() (map[ruleID]uint8, error) {
	out := map[ruleID]uint8{}
	for _, fam := range []int{unix.AF_INET, unix.AF_INET6} {
		req := nl.NewNetlinkRequest(unix.RTM_GETRULE, unix.NLM_F_DUMP|unix.NLM_F_REQUEST)
		hdr := make([]byte, 12)
		hdr[0] = byte(fam)
		req.AddData(rawData(hdr))
		req.Sockets = d.sockets
		msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWRULE)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if len(m) < 12 {
				continue
			}
			attrs, err := nl.ParseRouteAttr(m[12:])
			if err != nil {
				return nil, fmt.Errorf("parsing rule dump: %w", err)
			}
			prio, dscp, has := 0, uint8(0), false
			for _, a := range attrs {
				switch int(a.Attr.Type) {
				case nl.FRA_PRIORITY:
					if len(a.Value) >= 4 {
						prio = int(binary.NativeEndian.Uint32(a.Value))
					}
				case d.dscpAttr():
					if len(a.Value) >= 1 {
						dscp, has = a.Value[0], true
					}
				}
			}
			if has {
				out[ruleID{int(m[0]), prio}] = dscp
			}
		}
	}
	return out, nil
}

// prefixOf is a helper for keys: the canonical string of an optional prefix.
func prefixOf(n *net.IPNet) string {
	if n == nil {
		return ""
	}
	return n.String()
}

// rawData is a fixed header in a netlink request (AddRawData would put it after the attributes).
type rawData []byte

func (r rawData) Len() int          { return len(r) }
func (r rawData) Serialize() []byte { return r }
