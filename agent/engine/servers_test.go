package engine

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"testing"

	paho "github.com/eclipse/paho.mqtt.golang"
)

func mustURLs(t *testing.T, raw ...string) []*url.URL {
	t.Helper()
	var out []*url.URL
	for _, r := range raw {
		u, err := url.Parse(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// TestServersOrder: before the first connection the nodes are tried as given; after, the node
// of the last connection goes last, and the agents of one node spread over the others.
func TestServersOrder(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	three := mustURLs(t, "tcp://a:1883", "tcp://b:1883", "tcp://c:1883")
	for _, tc := range []struct {
		urls []string
		want any // nil: paho's own dialer
	}{
		{[]string{"tcp://a:1883"}, nil},
		{[]string{"ws://a:80", "ws://b:80"}, nil},
		{[]string{"tcp://a:1883", "mqtts://b:8883"}, "servers"},
	} {
		s, err := newServers(mustURLs(t, tc.urls...), "dev", quiet)
		if err != nil || (s == nil) != (tc.want == nil) {
			t.Errorf("%v: servers %v, err %v; want %v", tc.urls, s, err, tc.want)
		}
	}
	if _, err := newServers(mustURLs(t, "tcp://a:1883", "tcp:///nohost"), "dev", quiet); err == nil {
		t.Error("a URL without a host: want an error")
	}

	firstAfter := map[int]int{} // node 0's agents: the node each tries first after node 0's death
	for i := range 1000 {
		s, _ := newServers(three, fmt.Sprintf("dev-%d", i), quiet)
		if o := s.order(); !slices.Equal(o, []int{0, 1, 2}) {
			t.Fatalf("before a connection: order %v; want as given", o)
		}
		s.dialed = 0
		s.connected()
		o := s.order()
		if len(o) != 3 || o[2] != 0 || o[0] == o[1] || o[0] == 0 || o[1] == 0 {
			t.Fatalf("after a connection to node 0: order %v; want the other two, then 0", o)
		}
		firstAfter[o[0]]++
	}
	if firstAfter[1] < 400 || firstAfter[2] < 400 {
		t.Errorf("1,000 agents of a dead node go first to %v; want about half to each other node", firstAfter)
	}
}

// TestServersDial: paho's attempts of one Connect dial the nodes in the servers' order,
// whatever URL paho passes; a refused node is followed by the next.
func TestServersDial(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var ls []net.Listener
	var raw []string
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ls = append(ls, l)
		raw = append(raw, "tcp://"+l.Addr().String())
	}
	s, _ := newServers(mustURLs(t, raw...), "dev-1", quiet)
	o := paho.NewClientOptions()
	s.reset()
	c, err := s.dial(nil, *o)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if got := s.connected(); got != raw[0] {
		t.Fatalf("first connection to %s; want %s (as given)", got, raw[0])
	}
	want := s.order()[0]
	ls[want].Close() // the node it would try first after losing node 0 is down too
	s.reset()
	if _, err := s.dial(nil, *o); err == nil {
		t.Fatalf("dialing the closed node %d: no error", want)
	}
	c, err = s.dial(nil, *o) // paho's next attempt of the same Connect
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if got, other := s.connected(), raw[3-want]; got != other {
		t.Errorf("after node 0 and node %d: connected to %s; want %s", want, got, other)
	}
}
