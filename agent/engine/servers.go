package engine

import (
	"crypto/tls"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"net/url"
	"os"
	"sync"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// servers chooses which broker node each connection attempt dials. paho tries its servers in
// the fixed order they were given, so after the node an agent was connected to died, every
// attempt dialed the dead node first (on a real network a dead host costs the connect timeout,
// 10 s, before the next node is tried), and every agent of the fleet went to the same next
// node. With servers, paho's dialer (SetCustomOpenConnectionFn) follows this order instead:
// the node of the last connection goes last, and the others come in an order rotated by the
// device's hash, so the agents of a dead node spread evenly over the nodes left.
type servers struct {
	urls   []*url.URL
	spread int // the device's hash: where in the other nodes it starts
	log    *slog.Logger

	mu     sync.Mutex
	cur    int // the node of the current or last connection; -1 before the first
	next   int // how many dials the running Connect made
	dialed int // the node of the last dial
}

// newServers returns the dialing order for urls, or nil when paho's own dialer must stay (one
// node, or a scheme or proxy setting only paho's dialer handles).
func newServers(urls []*url.URL, device string, log *slog.Logger) (*servers, error) {
	if len(urls) < 2 || os.Getenv("all_proxy") != "" || os.Getenv("ALL_PROXY") != "" {
		return nil, nil
	}
	for _, u := range urls {
		switch u.Scheme {
		case "mqtt", "tcp", "ssl", "tls", "mqtts", "mqtt+ssl", "tcps":
		default:
			return nil, nil // ws, wss, unix: paho's dialer, in the order given
		}
		if u.Host == "" {
			return nil, fmt.Errorf("agent: broker URL %q has no host", u.String())
		}
	}
	h := fnv.New32a()
	h.Write([]byte(device))
	return &servers{urls: urls, spread: int(h.Sum32() & 0x7fffffff), cur: -1, log: log}, nil
}

// order is the nodes to try, in turn: as given before the first connection; afterwards the
// others first (rotated by the device's hash), the last connection's node last.
func (s *servers) order() []int {
	n := len(s.urls)
	out := make([]int, 0, n)
	if s.cur < 0 {
		for i := range n {
			out = append(out, i)
		}
		return out
	}
	k := s.spread % (n - 1)
	for i := range n - 1 {
		out = append(out, (s.cur+1+(k+i)%(n-1))%n)
	}
	return append(out, s.cur)
}

// reset starts a connection attempt: its first dial goes to the first node of order.
func (s *servers) reset() {
	s.mu.Lock()
	s.next = 0
	s.mu.Unlock()
}

// dial opens the network connection of paho's next attempt, to the next node of order (paho
// passes its own choice of URL, ignored), as paho's dialer would (TCP or TLS).
func (s *servers) dial(_ *url.URL, o paho.ClientOptions) (net.Conn, error) {
	s.mu.Lock()
	ord := s.order()
	i := ord[s.next%len(ord)]
	s.next++
	s.dialed = i
	s.mu.Unlock()
	u := s.urls[i]
	s.log.Debug("agent: dialing a broker node", "url", u.String())
	c, err := dialNode(u, o)
	if err != nil {
		s.log.Debug("agent: dialing a broker node", "url", u.String(), "err", err)
	}
	return c, err
}

// dialNode opens a network connection to the broker node u, as paho's dialer would (TCP or TLS).
func dialNode(u *url.URL, o paho.ClientOptions) (net.Conn, error) {
	d := &net.Dialer{Timeout: o.ConnectTimeout}
	switch u.Scheme {
	case "mqtt", "tcp":
		return d.Dial("tcp", u.Host)
	case "ssl", "tls", "mqtts", "mqtt+ssl", "tcps":
		return tls.DialWithDialer(d, "tcp", u.Host, o.TLSConfig)
	}
	return nil, errors.New("agent: unsupported broker URL scheme " + u.Scheme)
}

// connected records that the last dial's node accepted the connection, and returns its URL.
func (s *servers) connected() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = s.dialed
	return s.urls[s.cur].String()
}

// current is the node of the current or last connection (-1 before the first).
func (s *servers) current() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}
