package netlab

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

func TestAvailable(t *testing.T) {
	if err := Available(); err != nil {
		t.Fatal(err)
	}
}

func TestLab(t *testing.T) {
	lab := New(t, Spec{Transports: 2})
	w1, w2 := lab.WANs[0], lab.WANs[1]

	t.Run("layout", func(t *testing.T) {
		if got := len(lab.WANs); got != 2 {
			t.Fatalf("got %d WANs; want 2", got)
		}
		for _, name := range append([]string{lab.MgmtRootIf, lab.MgmtBranchIf}, w1.BranchIf, w1.WANIf) {
			if len(name) > 15 {
				t.Errorf("interface name %q has %d chars; want <= 15", name, len(name))
			}
		}
		if !mgmtPool.Contains(lab.MgmtRootIP) || netip.PrefixFrom(lab.MgmtRootIP, 30).Masked() != netip.PrefixFrom(lab.MgmtBranchIP, 30).Masked() {
			t.Errorf("management addresses %s, %s; want one /30 in %s", lab.MgmtRootIP, lab.MgmtBranchIP, mgmtPool)
		}
		bh, err := lab.Branch.Handle()
		if err != nil {
			t.Fatal(err)
		}
		defer bh.Close()
		routes, err := bh.RouteList(nil, netlink.FAMILY_V4)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range routes {
			if r.Dst == nil || r.Gw != nil {
				t.Errorf("branch main table has %v; want connected routes only", r)
			}
		}
		if _, err := bh.RouteGet(lab.ProbeTarget.AsSlice()); !errors.Is(err, syscall.ENETUNREACH) {
			t.Errorf("branch main table lookup of %s: got %v; want ENETUNREACH", lab.ProbeTarget, err)
		}
		out, err := lab.WANs[0].NS.Command(t.Context(), "cat", "/proc/sys/net/ipv4/icmp_echo_ignore_all").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "1" {
			t.Errorf("icmp_echo_ignore_all in %s: got %q, %v; want 1", w1.NS.Name, out, err)
		}
	})

	t.Run("gateway answers on every transport", func(t *testing.T) {
		for _, w := range lab.WANs {
			before := w.Responder.Stats()
			p := openPinger(t, lab.Branch, w.BranchAddr.Addr())
			got := p.pingN(w.Gateway, 1, 3, 2*time.Second)
			if len(got) != 3 {
				t.Fatalf("%s: got %d replies from %s; want 3", w.BranchIf, len(got), w.Gateway)
			}
			for _, r := range got {
				if r.from != w.Gateway {
					t.Errorf("reply from %s; want %s", r.from, w.Gateway)
				}
			}
			st := w.Responder.Stats()
			if st.Requests-before.Requests < 3 || st.Replies-before.Replies < 3 {
				t.Errorf("%s responder: got %+v after %+v; want >= 3 more requests and replies", w.NS.Name, st, before)
			}
		}
	})

	t.Run("probe target only through a per-transport table", func(t *testing.T) {
		// Unbound, the main table applies: no route.
		p0 := openPinger(t, lab.Branch, netip.IPv4Unspecified())
		if err := p0.send(lab.ProbeTarget, 1); !errors.Is(err, syscall.ENETUNREACH) {
			t.Errorf("unbound echo to %s: got %v; want ENETUNREACH", lab.ProbeTarget, err)
		}
		// What the agent installs: a table per transport and a rule by source.
		bh, err := lab.Branch.Handle()
		if err != nil {
			t.Fatal(err)
		}
		defer bh.Close()
		for _, w := range lab.WANs {
			link, err := bh.LinkByName(w.BranchIf)
			if err != nil {
				t.Fatal(err)
			}
			table := 100 + w.Index
			if err := bh.RouteAdd(&netlink.Route{LinkIndex: link.Attrs().Index, Gw: w.Gateway.AsSlice(), Table: table}); err != nil {
				t.Fatalf("route in table %d: %v", table, err)
			}
			rule := netlink.NewRule()
			rule.Src = &net.IPNet{IP: w.BranchAddr.Addr().AsSlice(), Mask: net.CIDRMask(32, 32)}
			rule.Table = table
			if err := bh.RuleAdd(rule); err != nil {
				t.Fatalf("rule: %v", err)
			}
		}
		for _, w := range lab.WANs {
			before := w.Responder.Stats()
			p := openPinger(t, lab.Branch, w.BranchAddr.Addr())
			got := p.pingN(lab.ProbeTarget, 1, 3, 2*time.Second)
			if len(got) != 3 {
				t.Fatalf("via %s: got %d replies from %s; want 3", w.BranchIf, len(got), lab.ProbeTarget)
			}
			if got[0].from != lab.ProbeTarget {
				t.Errorf("via %s: reply from %s; want %s", w.BranchIf, got[0].from, lab.ProbeTarget)
			}
			if st := w.Responder.Stats(); st.Requests-before.Requests != 3 {
				t.Errorf("%s saw %d requests; want 3 (the probes went through another transport)", w.NS.Name, st.Requests-before.Requests)
			}
		}
	})

	t.Run("delay", func(t *testing.T) {
		w1.Responder.Set(Impairment{Delay: 80 * time.Millisecond})
		defer w1.Responder.Set(Impairment{})
		p := openPinger(t, lab.Branch, w1.BranchAddr.Addr())
		got := p.pingN(w1.Gateway, 1, 3, 2*time.Second)
		if len(got) != 3 {
			t.Fatalf("got %d replies; want 3", len(got))
		}
		for _, r := range got {
			if r.rtt < 80*time.Millisecond {
				t.Errorf("seq %d: rtt %v; want >= 80ms", r.seq, r.rtt)
			}
		}
		// The other transport is not impaired.
		p2 := openPinger(t, lab.Branch, w2.BranchAddr.Addr())
		if got := p2.pingN(w2.Gateway, 1, 1, 2*time.Second); len(got) != 1 || got[0].rtt >= 80*time.Millisecond {
			t.Errorf("%s: got %+v; want one reply faster than 80ms", w2.BranchIf, got)
		}
	})

	t.Run("jitter reorders", func(t *testing.T) {
		w1.Responder.Set(Impairment{Delay: 50 * time.Millisecond, Jitter: 40 * time.Millisecond})
		defer w1.Responder.Set(Impairment{})
		p := openPinger(t, lab.Branch, w1.BranchAddr.Addr())
		const n = 20
		for seq := 1; seq <= n; seq++ {
			if err := p.send(w1.Gateway, seq); err != nil {
				t.Fatal(err)
			}
		}
		got := p.collect(n, 3*time.Second)
		if len(got) != n {
			t.Fatalf("got %d replies; want %d", len(got), n)
		}
		ordered := slices.IsSortedFunc(got, func(a, b echoReply) int { return a.seq - b.seq })
		for _, r := range got {
			if r.rtt < 10*time.Millisecond {
				t.Errorf("seq %d: rtt %v; want >= 10ms (50ms - 40ms)", r.seq, r.rtt)
			}
		}
		if ordered {
			t.Errorf("20 replies with ±40ms jitter arrived in order; want some reordering")
		}
	})

	t.Run("loss 1 answers nothing", func(t *testing.T) {
		w1.Responder.Set(Impairment{Loss: 1})
		defer w1.Responder.Set(Impairment{})
		before := w1.Responder.Stats()
		p := openPinger(t, lab.Branch, w1.BranchAddr.Addr())
		for seq := 1; seq <= 3; seq++ {
			if err := p.send(w1.Gateway, seq); err != nil {
				t.Fatal(err)
			}
		}
		// The requests arrived and were dropped, so no reply can follow.
		await(t, 2*time.Second, "3 requests dropped", func() bool {
			return w1.Responder.Stats().Dropped-before.Dropped == 3
		})
		if got := p.collect(1, 200*time.Millisecond); len(got) != 0 {
			t.Errorf("got %d replies with Loss 1; want 0 (the kernel must not answer)", len(got))
		}
		if st := w1.Responder.Stats(); st.Replies != before.Replies {
			t.Errorf("responder replied %d times; want 0", st.Replies-before.Replies)
		}
	})

	t.Run("loss 0.5 answers about half", func(t *testing.T) {
		w1.Responder.Set(Impairment{Loss: 0.5})
		defer w1.Responder.Set(Impairment{})
		before := w1.Responder.Stats()
		p := openPinger(t, lab.Branch, w1.BranchAddr.Addr())
		const n = 200
		for seq := 1; seq <= n; seq++ {
			if err := p.send(w1.Gateway, seq); err != nil {
				t.Fatal(err)
			}
		}
		await(t, 2*time.Second, "200 requests answered or dropped", func() bool {
			st := w1.Responder.Stats()
			return st.Replies+st.Dropped-before.Replies-before.Dropped == n
		})
		replied := int(w1.Responder.Stats().Replies - before.Replies)
		got := p.collect(replied, 2*time.Second)
		if len(got) != replied {
			t.Errorf("received %d replies; responder sent %d", len(got), replied)
		}
		if replied < 60 || replied > 140 {
			t.Errorf("%d of %d answered with Loss 0.5; want 60..140", replied, n)
		}
	})

	t.Run("link down and up", func(t *testing.T) {
		if err := w1.SetLink(false); err != nil {
			t.Fatal(err)
		}
		before := w1.Responder.Stats()
		p := openPinger(t, lab.Branch, w1.BranchAddr.Addr())
		for seq := 1; seq <= 3; seq++ {
			p.send(w1.Gateway, seq) // may fail at once without carrier: no reply either way
		}
		// No event says "nothing will come": wait a bounded while.
		if got := p.collect(1, 300*time.Millisecond); len(got) != 0 {
			t.Errorf("got %d replies over a down link; want 0", len(got))
		}
		if st := w1.Responder.Stats(); st.Requests != before.Requests {
			t.Errorf("responder saw %d requests over a down link; want 0", st.Requests-before.Requests)
		}
		// The other transport is unaffected.
		p2 := openPinger(t, lab.Branch, w2.BranchAddr.Addr())
		if got := p2.pingN(w2.Gateway, 1, 1, 2*time.Second); len(got) != 1 {
			t.Errorf("%s: got %d replies while %s is down; want 1", w2.BranchIf, len(got), w1.BranchIf)
		}

		if err := w1.SetLink(true); err != nil {
			t.Fatal(err)
		}
		seq := 100
		await(t, 5*time.Second, "answering again after SetLink(true)", func() bool {
			seq++
			return len(p.pingN(w1.Gateway, seq, 1, 200*time.Millisecond)) == 1
		})
	})

	t.Run("management link reaches the root namespace", func(t *testing.T) {
		ln, err := net.Listen("tcp", netip.AddrPortFrom(lab.MgmtRootIP, 0).String())
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			if c, err := ln.Accept(); err == nil {
				c.Write([]byte("hello"))
				c.Close()
			}
		}()
		var c net.Conn
		err = lab.Branch.Do(func() (err error) {
			c, err = net.DialTimeout("tcp", ln.Addr().String(), 2*time.Second)
			return err
		})
		if err != nil {
			t.Fatalf("dial controller from branch: %v", err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 5)
		if _, err := c.Read(buf); err != nil || string(buf) != "hello" {
			t.Errorf("got %q, %v; want hello", buf, err)
		}
		if got := c.RemoteAddr().(*net.TCPAddr).IP.String(); got != lab.MgmtRootIP.String() {
			t.Errorf("connected to %s; want %s", got, lab.MgmtRootIP)
		}
		if got := c.LocalAddr().(*net.TCPAddr).IP.String(); got != lab.MgmtBranchIP.String() {
			t.Errorf("connected from %s; want %s", got, lab.MgmtBranchIP)
		}
	})
}

func TestCleanupRemovesEverything(t *testing.T) {
	var lab *Lab
	t.Run("build", func(t *testing.T) {
		lab = New(t, Spec{Transports: 2})
		lab.WANs[0].Responder.Set(Impairment{Delay: time.Hour}) // a pending reply must not hold cleanup
		p := openPinger(t, lab.Branch, lab.WANs[0].BranchAddr.Addr())
		if err := p.send(lab.WANs[0].Gateway, 1); err != nil {
			t.Fatal(err)
		}
		await(t, 2*time.Second, "request seen", func() bool { return lab.WANs[0].Responder.Stats().Requests == 1 })
	})
	if lab == nil {
		t.Fatal("lab not built")
	}
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v: %s", err, out)
	}
	if strings.Contains(string(out), lab.Name+"-") {
		t.Errorf("ip netns list after cleanup:\n%s\nwant no %s-*", out, lab.Name)
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), lab.Name+"-") {
			t.Errorf("/run/netns/%s left behind", e.Name())
		}
	}
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Name, lab.Name) {
			t.Errorf("root link %s left behind", l.Attrs().Name)
		}
	}
	if slices.Contains(Leftovers(), lab.Name) {
		t.Errorf("Leftovers() lists %s after cleanup", lab.Name)
	}
	if err := lab.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestTwoLabsCoexist(t *testing.T) {
	labs := make([]*Lab, 2)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range labs {
		wg.Go(func() {
			labs[i], errs[i] = Build(Spec{Transports: 1})
		})
	}
	wg.Wait()
	for i, l := range labs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		t.Cleanup(func() {
			if err := l.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	a, b := labs[0], labs[1]
	if a.Name == b.Name {
		t.Fatalf("both labs are called %s", a.Name)
	}
	if netip.PrefixFrom(a.MgmtRootIP, 30).Masked() == netip.PrefixFrom(b.MgmtRootIP, 30).Masked() {
		t.Errorf("both labs use management /30 of %s", a.MgmtRootIP)
	}
	for _, l := range labs {
		p := openPinger(t, l.Branch, l.WANs[0].BranchAddr.Addr())
		if got := p.pingN(l.WANs[0].Gateway, 1, 1, 2*time.Second); len(got) != 1 {
			t.Errorf("%s: got %d replies; want 1", l.Name, len(got))
		}
	}
}

func TestBuildRejectsBadSpec(t *testing.T) {
	for _, n := range []int{0, 5} {
		if l, err := Build(Spec{Transports: n}); err == nil {
			l.Close()
			t.Errorf("Build(Transports: %d): got nil error; want one", n)
		}
	}
}

func TestDownRefusesForeignNames(t *testing.T) {
	for _, name := range []string{"", "ew", "foo", "ew12345", "ewzzzz", "ew1234-br"} {
		if err := Down(name); err == nil {
			t.Errorf("Down(%q): got nil; want an error", name)
		}
	}
}

func TestDelay(t *testing.T) {
	tests := []struct {
		name     string
		imp      Impairment
		min, max time.Duration
	}{
		{"none", Impairment{}, 0, 0},
		{"fixed", Impairment{Delay: 80 * time.Millisecond}, 80 * time.Millisecond, 80 * time.Millisecond},
		{"jitter", Impairment{Delay: 50 * time.Millisecond, Jitter: 10 * time.Millisecond}, 40 * time.Millisecond, 60 * time.Millisecond},
		{"never negative", Impairment{Delay: 5 * time.Millisecond, Jitter: 50 * time.Millisecond}, 0, 55 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi := time.Duration(1<<62), time.Duration(-1)
			for range 10000 {
				d := delay(&tt.imp)
				lo, hi = min(lo, d), max(hi, d)
			}
			if lo < tt.min || hi > tt.max {
				t.Errorf("delays in [%v, %v]; want within [%v, %v]", lo, hi, tt.min, tt.max)
			}
			if tt.imp.Jitter > 0 && hi-lo < tt.imp.Jitter {
				t.Errorf("delays in [%v, %v]; want a spread of about 2×%v", lo, hi, tt.imp.Jitter)
			}
		})
	}
}
