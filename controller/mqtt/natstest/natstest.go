// Package natstest runs real 3-node NATS clusters (MQTT listener, JetStream R3, the
// partition mappings of docs/scale-out.md) on loopback for tests, with scripts/nats.sh.
package natstest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/edgewan/edgewan/scripts/scriptpath"
	"github.com/edgewan/edgewan/scripts/testserver"
)

// User and Password are the test cluster's one account.
const (
	User     = "edgewan"
	Password = "edgewan-test"
)

// Cluster is a running 3-node cluster, stopped when the test ends.
type Cluster struct {
	Dir      string
	URLs     []string // nats://, one per node
	MQTTURLs []string // tcp://, one per node
	// MonitorURLs are the nodes' HTTP monitoring endpoints (http://, /varz /jsz /healthz).
	MonitorURLs []string
	script      string
}

// Start starts a cluster on free loopback ports with one user (User, Password), or fails t
// (it never skips).
func Start(t testing.TB) *Cluster {
	t.Helper()
	return start(t)
}

// StartOperator starts a cluster in NATS operator mode (decentralised JWT authentication):
// authConf is the auth.conf a natsauth.Setup wrote (its Write), partitions those of its keys.
// No user/password: every client needs a user JWT signed with the setup's keys.
func StartOperator(t testing.TB, authConf string, partitions int) *Cluster {
	t.Helper()
	return start(t, "AUTH_CONF="+authConf, "PARTITIONS="+strconv.Itoa(partitions))
}

func start(t testing.TB, env ...string) *Cluster {
	t.Helper()
	script, err := scriptpath.Find("nats.sh")
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	if _, err := testserver.Run(nil, script, 10*time.Minute, "install"); err != nil {
		t.Fatalf("natstest: %v", err)
	}
	dir := t.TempDir()
	var lastErr error
	for range 5 {
		base, err := freeRange(23)
		if err != nil {
			t.Fatalf("natstest: %v", err)
		}
		if _, lastErr = testserver.Run(env, script, 2*time.Minute, "start", dir, strconv.Itoa(base), User, Password); lastErr != nil {
			_, _ = testserver.Run(nil, script, time.Minute, "stop", dir)
			continue
		}
		c := &Cluster{Dir: dir, script: script}
		for n := range 3 {
			p := base + 10*n
			c.URLs = append(c.URLs, fmt.Sprintf("nats://127.0.0.1:%d", p))
			c.MQTTURLs = append(c.MQTTURLs, fmt.Sprintf("tcp://127.0.0.1:%d", p+2))
			c.MonitorURLs = append(c.MonitorURLs, fmt.Sprintf("http://127.0.0.1:%d", p+3))
		}
		t.Cleanup(func() {
			if _, err := testserver.Run(nil, script, time.Minute, "stop", dir); err != nil {
				t.Errorf("natstest: %v", err)
			}
		})
		return c
	}
	t.Fatalf("natstest: no cluster after 5 attempts: %v", lastErr)
	return nil
}

// Kill kills node n (1..3) with SIGKILL.
func (c *Cluster) Kill(t testing.TB, n int) {
	t.Helper()
	cmd := exec.Command("bash", c.script, "stop", c.Dir, strconv.Itoa(n))
	cmd.Env = append(os.Environ(), "KILL=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("natstest: kill node %d: %v: %s", n, err, out)
	}
}

// LameDuck stops node n (1..3) gracefully, as for maintenance (scripts/nats.sh lameduck): it
// hands its Raft leaderships over at once, then closes its clients over up to 30 s (at most
// one a second) and exits. It returns at once; Restart waits for the old process to exit.
func (c *Cluster) LameDuck(t testing.TB, n int) {
	t.Helper()
	if _, err := testserver.Run(nil, c.script, time.Minute, "lameduck", c.Dir, strconv.Itoa(n)); err != nil {
		t.Fatalf("natstest: %v", err)
	}
}

// Restart starts node n again with its data and waits until it is healthy.
func (c *Cluster) Restart(t testing.TB, n int) {
	t.Helper()
	if _, err := testserver.Run(nil, c.script, 2*time.Minute, "restart", c.Dir, strconv.Itoa(n)); err != nil {
		t.Fatalf("natstest: %v", err)
	}
}

// MQTTAuthFailures counts the MQTT connections node n (1..3) refused for authentication so
// far, from its log: NATS 2.9 closes such a connection without a CONNACK, so a client cannot
// tell a refusal from a network error.
func (c *Cluster) MQTTAuthFailures(t testing.TB, n int) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Dir, "node"+strconv.Itoa(n)+".log"))
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	return bytes.Count(b, []byte("unable to connect: authentication error"))
}

// AwaitMQTTAuthFailures waits up to 5 s for node n's count of refused MQTT connections to
// reach want and returns the count then. The node writes its log line after it has closed
// the connection, so a client that has just seen the EOF can read the log before the line.
func (c *Cluster) AwaitMQTTAuthFailures(t testing.TB, n, want int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := c.MQTTAuthFailures(t, n)
		if got >= want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Load is what a node holds, from its /varz.
type Load struct {
	Connections int   `json:"connections"` // client connections, MQTT ones included
	Mem         int64 `json:"mem"`         // resident memory, bytes
}

// Varz reads node n's (1..3) /varz.
func (c *Cluster) Varz(n int) (Load, error) {
	var l Load
	resp, err := http.Get(c.MonitorURLs[n-1] + "/varz")
	if err != nil {
		return l, fmt.Errorf("natstest: varz of node %d: %w", n, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		return l, fmt.Errorf("natstest: varz of node %d: %w", n, err)
	}
	return l, nil
}

// freeRange returns a port p such that p..p+n look free (checked by listening on them). The
// range is drawn below the kernel's ephemeral ports (32768 up on Linux): a base taken from an
// ephemeral port lands among outgoing connections, which on a busy machine (tens of thousands
// of sockets in TIME_WAIT after a load test) left no free range at all.
func freeRange(n int) (int, error) {
	for range 200 {
		base := 10000 + rand.IntN(32000-10000-n)
		ok := true
		for p := base; p <= base+n && ok; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, fmt.Errorf("no range of %d free ports", n)
}

// LeadOn moves the Raft leader of stream to node n (1..3), by asking its leader to step down
// (a step-down hands the leadership over at once: no election timeout) until n leads it, so
// that a test can kill the node leading a given asset (TestScaleOut's worst cases).
func (c *Cluster) LeadOn(t testing.TB, stream string, n int) {
	t.Helper()
	conn, err := nats.Connect(c.URLs[n-1], nats.UserInfo(User, Password))
	if err != nil {
		t.Fatalf("natstest: LeadOn: %v", err)
	}
	defer conn.Close()
	js, err := jetstream.New(conn)
	if err != nil {
		t.Fatalf("natstest: LeadOn: %v", err)
	}
	want := "n" + strconv.Itoa(n)
	leader := ""
	for range 40 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := js.Stream(ctx, stream)
		cancel()
		if err == nil && st.CachedInfo().Cluster != nil {
			leader = st.CachedInfo().Cluster.Leader
		}
		if leader == want {
			return
		}
		if err == nil && leader != "" {
			_, _ = conn.Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, nil, 5*time.Second)
		}
		time.Sleep(500 * time.Millisecond) // the new leader's election, then look again
	}
	t.Fatalf("natstest: %s still led by %q, not %s, after 40 step-downs", stream, leader, want)
}
