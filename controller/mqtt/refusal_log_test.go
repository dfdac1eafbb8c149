package mqtt_test

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgewan/edgewan/controller/mqtt"
)

// logBuffer is an io.Writer safe for the broker's goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// lines returns the logged lines containing s.
func (l *logBuffer) lines(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.buf.String(), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// A client retrying a CONNECT with a 10 KB username in a loop gets one short log line per
// RefusalLogEvery, which counts the refusals it did not log.
func TestEmbeddedRefusalLogBounded(t *testing.T) {
	logs := &logBuffer{}
	e := startEmbedded(t, func(o *mqtt.Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		o.RefusalLogEvery = 2 * time.Second
	})
	user := "dev-" + strings.Repeat("x", 10_000)
	const line = `msg="mqtt: refused client"`
	n := 0
	for deadline := time.Now().Add(wait); len(logs.lines(line)) < 2; n++ {
		if time.Now().After(deadline) {
			t.Fatalf("after %d refused CONNECTs in %v: %d log lines; want a 2nd after RefusalLogEvery", n, wait, len(logs.lines(line)))
		}
		_, err := dialAgent(t, e.url, e.tc, user, "wrong", func(o *paho.ClientOptions) { o.SetClientID("long-user").SetProtocolVersion(4) })
		if !refused(err) {
			t.Fatalf("connect: %v; want refused", err)
		}
		if n == 0 && len(logs.lines(line)) != 1 {
			t.Fatalf("after the 1st refused CONNECT: log lines %q; want 1", logs.lines(line))
		}
	}
	got := logs.lines(line)
	if len(got) != 2 {
		t.Fatalf("log lines %q; want 2", got)
	}
	// the 2nd line is the n-th CONNECT: those in between were not logged
	for i, want := range []string{"skipped=0", "skipped=" + strconv.Itoa(n-2)} {
		if !strings.HasSuffix(got[i], want) {
			t.Errorf("log line %d: %s; want it to end with %s", i+1, got[i], want)
		}
		if !strings.Contains(got[i], "username="+user[:64]+" ") || len(got[i]) > 500 {
			t.Errorf("log line %d (%d bytes): want the username cut to 64 bytes", i+1, len(got[i]))
		}
	}
}
