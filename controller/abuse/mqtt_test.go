package abuse

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgewan/edgewan/agent/sim"
	"github.com/edgewan/edgewan/coreapi/soc"
	"github.com/edgewan/edgewan/telemetry"
)

// mqttConn is a raw MQTT connection with an agent's (or anyone's) credentials, which notices
// when the broker closes it.
type mqttConn struct {
	c    paho.Client
	lost atomic.Bool
	gone chan struct{}
}

func dialMQTT(acc *sim.Access, clientID, user, pass string) (*mqttConn, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(acc.MQTT.CAPEM))
	m := &mqttConn{gone: make(chan struct{})}
	opts := paho.NewClientOptions().AddBroker(acc.MQTT.URL).SetClientID(clientID).SetUsername(user).SetPassword(pass).
		SetTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}).SetAutoReconnect(false).
		SetConnectRetry(false).SetConnectTimeout(10 * time.Second).SetCleanSession(true).
		SetConnectionLostHandler(func(paho.Client, error) {
			if m.lost.CompareAndSwap(false, true) {
				close(m.gone)
			}
		})
	m.c = paho.NewClient(opts)
	tok := m.c.Connect()
	if !tok.WaitTimeout(15 * time.Second) {
		return nil, fmt.Errorf("connect: no CONNACK")
	}
	if err := tok.Error(); err != nil {
		return nil, err
	}
	return m, nil
}

// closedWithin reports whether the broker closed the connection within d.
func (m *mqttConn) closedWithin(d time.Duration) bool {
	select {
	case <-m.gone:
		return true
	case <-time.After(d):
		return false
	}
}

func (m *mqttConn) close() { m.c.Disconnect(0) }

// metricSum sums every series of the metric name in a /metrics text.
func metricSum(text, name string) float64 {
	var sum float64
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, name) || (len(l) > len(name) && l[len(name)] != '{' && l[len(name)] != ' ') {
			continue
		}
		f := strings.Fields(l)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// seriesCount counts the samples of /metrics (lines that are not comments).
func seriesCount(text, prefix string) int {
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") && strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// TestMQTTAbuse uses another site's credentials on every topic, sends malformed and
// out-of-range payloads on an agent's own topics, and wrong passwords. The properties:
// refused, counted in the metrics, at most one SOC case note per window, the controller up,
// metric cardinality bounded.
func TestMQTTAbuse(t *testing.T) {
	t.Parallel() // with the faults' outages
	c := newCtl(t, "")
	_, tok := c.Key("", "sdwan:read", "sdwan:write", "soc:read", "soc:write")
	c.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	claim := func(name string) *sim.Access {
		var site struct {
			ID    string
			Claim string `json:"claim_token"`
		}
		c.JSON("POST", "/sd-wan/v1/sites", tok, map[string]any{"name": name, "transports": []map[string]any{
			{"name": "inet", "kind": "broadband", "interface": "eth0", "probe_targets": []string{"198.18.100.1"}}}}, &site)
		acc, err := sim.Claim(ctx, c.client(), c.URL, site.Claim, name+"-router")
		if err != nil {
			t.Fatal(err)
		}
		return acc
	}
	a, b := claim("abuse-a"), claim("abuse-b")
	// A valid report first, so the site is live and the metrics have their series.
	ag, err := sim.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := ag.Report(ctx, time.Now(), time.Second, sim.Window("inet", 10, 0, 20, 1)); err != nil {
		t.Fatal(err)
	}
	ag.Close()
	before := c.Scrape()
	var tried, refusedN, notCounted, notClosed, violations int
	fail := func(format string, args ...any) { t.Errorf(format, args...) }

	// Another site's topics, published and subscribed: each must be refused and close the
	// connection (docs/telemetry.md: a refused subscribe disconnects too).
	topics := []string{}
	for _, k := range append(append([]string{}, telemetry.UpKinds...), telemetry.DownKinds...) {
		topics = append(topics, telemetry.Topic(b.Site.ID, k))
	}
	topics = append(topics, telemetry.TopicRoot+"+/telemetry", "edgewan/#", "#", "$SYS/#", telemetry.Topic(a.Site.ID, "+"))
	for _, topic := range topics {
		for _, sub := range []bool{false, true} {
			if sub && strings.HasSuffix(topic, "/"+telemetry.KindStatus) {
				continue
			}
			if !sub && strings.ContainsAny(topic, "+#") {
				continue // not a valid topic name to publish to: the client refuses it itself
			}
			tried++
			violations++
			m, err := dialMQTT(a, a.Device, a.MQTT.Username, a.MQTT.Password)
			if err != nil {
				t.Fatalf("connect as %s: %v", a.Device, err)
			}
			what := "publish to " + topic
			if sub {
				what = "subscribe to " + topic
				st := m.c.Subscribe(topic, 1, func(paho.Client, paho.Message) {})
				if st.WaitTimeout(5*time.Second) && st.Error() == nil {
					if code := st.(*paho.SubscribeToken).Result()[topic]; code != 0x80 {
						fail("%s with site %s's credentials: SUBACK %#x, want 0x80", what, a.Site.ID, code)
					} else {
						refusedN++
					}
				} else {
					refusedN++ // closed before SUBACK: refused too
				}
			} else {
				_ = m.c.Publish(topic, 1, false, []byte(`{"v":1}`)).WaitTimeout(3 * time.Second)
				refusedN++ // counted below if the connection stays open
			}
			if !m.closedWithin(3 * time.Second) {
				notClosed++
				if !sub {
					refusedN--
				}
				fail("%s with site %s's credentials: the connection stayed open", what, a.Site.ID)
			}
			m.close()
		}
	}

	// Malformed and out-of-range payloads on the agent's own topics: each refused and counted
	// once in edgewan_ingest_rejected_total.
	rep := func(mut func(m map[string]any)) []byte {
		m := map[string]any{"v": telemetry.SchemaVersion, "site": a.Site.ID, "device": a.Device, "seq": 1000,
			"ts": time.Now().UTC().Format(time.RFC3339Nano), "window_ms": 1000,
			"transports": []any{map[string]any{"name": "inet", "sent": 10, "lost": 0, "latency_ms": 20}}}
		mut(m)
		b, _ := json.Marshal(m)
		return b
	}
	tw := func(k string, v any) func(map[string]any) {
		return func(m map[string]any) { m["transports"].([]any)[0].(map[string]any)[k] = v }
	}
	set := func(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
	ev := func(mut func(m map[string]any)) []byte {
		m := map[string]any{"v": telemetry.SchemaVersion, "site": a.Site.ID, "device": a.Device,
			"ts": time.Now().UTC().Format(time.RFC3339Nano), "type": "path.switched", "class": "voice", "from": "inet", "to": "inet", "reason": "local"}
		mut(m)
		b, _ := json.Marshal(m)
		return b
	}
	ack := func(mut func(m map[string]any)) []byte {
		m := map[string]any{"v": telemetry.SchemaVersion, "site": a.Site.ID, "device": a.Device,
			"ts": time.Now().UTC().Format(time.RFC3339Nano), "policy": "pol_unknown", "version": 1, "status": "applied"}
		mut(m)
		b, _ := json.Marshal(m)
		return b
	}
	big := strings.Repeat("x", 1000)
	payloads := []struct {
		name, kind string
		body       []byte
	}{
		{"not JSON", telemetry.KindTelemetry, []byte(`{"v":1,`)},
		{"JSON null", telemetry.KindTelemetry, []byte(`null`)},
		{"JSON array", telemetry.KindTelemetry, []byte(`[]`)},
		{"invalid UTF-8", telemetry.KindTelemetry, []byte("{\"v\":1,\"site\":\"\xff\xfe\"}")},
		{"wrong schema version", telemetry.KindTelemetry, rep(set("v", 999))},
		{"another site in the body", telemetry.KindTelemetry, rep(set("site", b.Site.ID))},
		{"another device in the body", telemetry.KindTelemetry, rep(set("device", b.Device))},
		{"ts 2099-01-01", telemetry.KindTelemetry, rep(set("ts", "2099-01-01T00:00:00Z"))},
		{"ts 9999-12-31", telemetry.KindTelemetry, rep(set("ts", "9999-12-31T23:59:59Z"))},
		{"ts 1970-01-01", telemetry.KindTelemetry, rep(set("ts", "1970-01-01T00:00:00Z"))},
		{"ts missing", telemetry.KindTelemetry, rep(func(m map[string]any) { delete(m, "ts") })},
		{"ts not a time", telemetry.KindTelemetry, rep(set("ts", "yesterday"))},
		{"window_ms 0", telemetry.KindTelemetry, rep(set("window_ms", 0))},
		{"window_ms negative", telemetry.KindTelemetry, rep(set("window_ms", -1000))},
		{"window_ms huge", telemetry.KindTelemetry, rep(set("window_ms", math.MaxInt32))},
		{"seq negative", telemetry.KindTelemetry, rep(set("seq", -1))},
		{"no transports", telemetry.KindTelemetry, rep(set("transports", []any{}))},
		{"sent negative", telemetry.KindTelemetry, rep(tw("sent", -5))},
		{"lost over sent", telemetry.KindTelemetry, rep(tw("lost", 50))},
		{"latency negative", telemetry.KindTelemetry, rep(tw("latency_ms", -20))},
		{"latency 1e308", telemetry.KindTelemetry, rep(tw("latency_ms", 1e308))},
		{"latency as a string", telemetry.KindTelemetry, rep(tw("latency_ms", "20"))},
		{"transport name 1000 bytes", telemetry.KindTelemetry, rep(tw("name", big))},
		{"500 transports", telemetry.KindTelemetry, rep(func(m map[string]any) {
			var ts []any
			for i := 0; i < 500; i++ {
				ts = append(ts, map[string]any{"name": fmt.Sprintf("t%d", i), "sent": 1})
			}
			m["transports"] = ts
		})},
		{"event: unknown type", telemetry.KindEvents, ev(set("type", "zz.unknown"))},
		{"event: class of 1000 bytes, no ts", telemetry.KindEvents, ev(func(m map[string]any) { m["class"] = big; delete(m, "ts") })},
		{"event: ts 9999", telemetry.KindEvents, ev(set("ts", "9999-12-31T23:59:59Z"))},
		{"event: reason of 1000 bytes", telemetry.KindEvents, ev(set("reason", big))},
		{"event: not JSON", telemetry.KindEvents, []byte(`{{`)},
		{"ack: status bogus", telemetry.KindAcks, ack(set("status", "bogus"))},
		{"ack: version negative", telemetry.KindAcks, ack(set("version", -1))},
		{"ack: ts 2099", telemetry.KindAcks, ack(set("ts", "2099-01-01T00:00:00Z"))},
		{"status: state bogus", telemetry.KindStatus, []byte(`{"v":1,"device":"` + a.Device + `","state":"bogus","ts":"2026-01-01T00:00:00Z"}`)},
		{"status: not JSON", telemetry.KindStatus, []byte(`]`)},
		{"65 KiB payload", telemetry.KindTelemetry, []byte(`{"v":1,"pad":"` + strings.Repeat("a", 65<<10) + `"}`)},
		{"10 MB payload", telemetry.KindTelemetry, []byte(`{"v":1,"pad":"` + strings.Repeat("a", 10<<20) + `"}`)},
	}
	rejected := func() float64 { return metricSum(c.Scrape(), "edgewan_ingest_rejected_total") }
	m, err := dialMQTT(a, a.Device, a.MQTT.Username, a.MQTT.Password)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range payloads {
		tried++
		if m.lost.Load() { // an oversize payload closes the connection: come back
			if m, err = dialMQTT(a, a.Device, a.MQTT.Username, a.MQTT.Password); err != nil {
				t.Fatal(err)
			}
		}
		r0 := rejected()
		m.c.Publish(telemetry.Topic(a.Site.ID, p.kind), 1, false, p.body).WaitTimeout(5 * time.Second)
		counted := false
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
			if rejected() > r0 {
				counted = true
				break
			}
			time.Sleep(20 * time.Millisecond) // ingest is asynchronous: poll its counter
		}
		if counted {
			refusedN++
		} else {
			notCounted++
			fail("%s payload %q on %s: not counted in edgewan_ingest_rejected_total", p.kind, p.name, a.Site.ID)
		}
	}
	m.close()

	// Label cardinality: 300 events with distinct reasons, classes and transports.
	m, err = dialMQTT(a, a.Device, a.MQTT.Username, a.MQTT.Password)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		tried++
		n := strconv.Itoa(i)
		m.c.Publish(telemetry.Topic(a.Site.ID, telemetry.KindEvents), 1, false,
			ev(func(e map[string]any) { e["reason"], e["class"], e["to"] = "r"+n, "c"+n, "t"+n })).WaitTimeout(5 * time.Second)
	}
	m.close()

	// Wrong passwords: refused, and (as on the HTTP API) a SOC case for the guessing.
	const guesses = 100
	wrongRefused := 0
	for i := 0; i < guesses; i++ {
		tried++
		if m, err := dialMQTT(a, "guesser", a.MQTT.Username, "wrong-"+strconv.Itoa(i)); err != nil {
			wrongRefused++
		} else {
			m.close()
			fail("wrong password %d accepted", i)
		}
	}
	refusedN += wrongRefused
	// Throttled as on the HTTP API: past a burst of 10 failures the address's CONNECTs are
	// refused without a password check.
	throttledN := metricSum(c.Scrape(), `edgewan_mqtt_logins_refused_total{reason="throttled"}`)
	throttled := throttledN > 0
	if !throttled {
		fail("%d wrong MQTT passwords from one address: never throttled", guesses)
	}

	// The controller is up, and the metrics did not grow with the abuse.
	if !c.Running() {
		t.Fatalf("the controller exited:\n%s", c.Log())
	}
	if code, body := c.Ready(); code != 200 {
		t.Errorf("/readyz after the abuse: %d %s", code, body)
	}
	// Ingest is asynchronous: wait until the 300 events have been through it.
	var after string
	for deadline := time.Now().Add(10 * time.Second); ; {
		after = c.Scrape()
		if metricSum(after, "edgewan_ingest_pending_events") == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling the queue depth gauge
	}
	// Reports dated 1970 or 9999 once pushed the lag histogram's sum to -9.7e9 (issue 12).
	if lag := metricSum(after, "edgewan_ingest_lag_seconds_sum"); lag < 0 || lag > 3600 {
		fail("edgewan_ingest_lag_seconds_sum is %g after out-of-window dates: they reached the lag figures", lag)
	}
	sBefore, sAfter := seriesCount(before, "edgewan_"), seriesCount(after, "edgewan_")
	switches := seriesCount(after, "edgewan_path_switches_total")
	if sAfter > sBefore+40 || switches > 20 {
		fail("metric cardinality grew with the abuse: edgewan_* series %d -> %d, edgewan_path_switches_total series %d; /metrics %d -> %d bytes",
			sBefore, sAfter, switches, len(before), len(after))
	}

	// SOC: one case for the ACL violations of device a, with at most one note in the window;
	// and one for the password guessing.
	var cases struct {
		Data []struct {
			ID, Title, Description, Rule, Subject string
		}
	}
	c.JSON("GET", "/v1/soc/cases?source=system&limit=100", tok, nil, &cases)
	aclCases, notes, guessCase, skewCase := 0, 0, false, false
	for _, k := range cases.Data {
		if k.Rule == soc.RuleClockSkew && k.Subject == a.Device {
			skewCase = true
			continue
		}
		if k.Rule == "mqtt.acl_violation" && k.Subject == a.Device {
			aclCases++
			var full struct{ Notes []any }
			c.JSON("GET", "/v1/soc/cases/"+k.ID, tok, nil, &full)
			notes += len(full.Notes)
			continue
		}
		// This controller saw no HTTP authentication failure: any authentication case is
		// the MQTT guessing's, whatever its rule is named.
		text := strings.ToLower(k.Rule + " " + k.Title + " " + k.Description)
		if strings.Contains(text, "brute") || strings.Contains(text, "password") || strings.Contains(k.Rule, "auth") {
			guessCase = true
		}
	}
	if aclCases != 1 || notes > 1 {
		fail("%d ACL violations of %s: %d SOC cases with %d notes; want 1 case, at most 1 note per window", violations, a.Device, aclCases, notes)
	}
	// A skewed agent (its reports dated 2099, 9999, 1970) gets an event and a SOC case.
	var evs struct {
		Data []struct {
			Data struct{ Device, Status string }
		}
	}
	c.JSON("GET", "/sd-wan/v1/events?type=device.status_changed&site="+a.Site.ID+"&limit=100", tok, nil, &evs)
	skewEvent := false
	for _, e := range evs.Data {
		skewEvent = skewEvent || e.Data.Device == a.Device && e.Data.Status == "clock_skew"
	}
	if !skewEvent || !skewCase {
		fail("reports of %s dated outside the window: clock_skew event %v, %s case %v; want both", a.Device, skewEvent, soc.RuleClockSkew, skewCase)
	}
	if !guessCase {
		fail("%d wrong MQTT passwords for %s: no SOC case", guesses, a.MQTT.Username)
	}
	figures.add(t, "mqtt", "messages and connections tried %d, refused %d, not counted %d, left connected %d, ACL cases %d with %d notes for %d violations, wrong passwords refused %d/%d (CONNECTs refused as throttled, without a password check: %.0f, paho trying 3.1.1 then 3.1; SOC case %v), agent clock skew event %v and case %v, edgewan_* series %d -> %d, path switch series %d, /metrics %d -> %d bytes, crashes %d",
		tried, refusedN, notCounted, notClosed, aclCases, notes, violations, wrongRefused, guesses, throttledN, guessCase, skewEvent, skewCase, sBefore, sAfter, switches, len(before), len(after), c.Crashes())
}
