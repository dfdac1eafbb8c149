package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/provider/providertest"
)

// agBenchPrompt is a 1 KB prompt with a few entities, and agBenchAnswer a 0.5 KB answer with one.
var (
	agBenchPrompt = strings.Repeat("Please summarise the ticket below in three bullet points. ", 8) +
		"The customer, reachable at jane.roe@example.com or (415) 555-2671, paid with 4111 1111 1111 1111 and asks " +
		"for a replacement of the espresso machine delivered on 29 April with a cracked water tank. " +
		strings.Repeat("Keep the tone friendly. ", 12)
	agBenchAnswer = strings.Repeat("The customer reports a damaged espresso machine and wants a replacement. ", 6) +
		"Reply to ops.lead@corp-example.com once it ships."
)

// agPercentile returns the p-th percentile (0-100) of ds, which it sorts.
func agPercentile(ds []time.Duration, p int) time.Duration {
	slices.Sort(ds)
	return ds[min(len(ds)-1, len(ds)*p/100)]
}

func agMicros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// agHistogram returns the cumulative bucket counts (upper bound to count) of a histogram from
// a metrics scrape.
func agHistogram(m map[string]float64, name string) map[float64]float64 {
	out := map[float64]float64{}
	prefix := name + `_bucket{le="`
	for k, v := range m {
		if le, ok := strings.CutPrefix(k, prefix); ok {
			bound, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64)
			if err == nil {
				out[bound] = v
			}
		}
	}
	return out
}

// agQuantile estimates quantile q of the observations between two scrapes of a histogram, as
// Prometheus's histogram_quantile does (linear within the bucket), in seconds.
func agQuantile(before, after map[float64]float64, q float64) float64 {
	bounds := make([]float64, 0, len(after))
	for b := range after {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	total := after[bounds[len(bounds)-1]] - before[bounds[len(bounds)-1]] // +Inf
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for _, b := range bounds {
		c := after[b] - before[b]
		if c >= rank {
			if b > 1e300 { // +Inf: the highest finite bound is all that is known
				return prevBound
			}
			if c == prevCount {
				return b
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(c-prevCount)
		}
		prevBound, prevCount = b, c
	}
	return prevBound
}

// BenchmarkAIGWChatOverhead measures what the gateway adds to a model call: POST /chat over
// HTTPS through the controller (redact the 1 KB prompt, call the fake OpenAI upstream on
// loopback, redact the answer, commit the audit record on SQLite) against the same request
// sent by the same client straight to the fake. Requests alternate, one at a time, so both
// see the same machine. "entities" has entities to redact both ways (so each request also
// raises a redaction.applied event); "clean" has none. It reports the percentiles of both and their differences (targets:
// overhead p50 < 1 ms, p99 < 5 ms), and the gateway's own histogram
// edgewan_aigw_overhead_seconds over the same requests.
func BenchmarkAIGWChatOverhead(b *testing.B) {
	clean := strings.NewReplacer("jane.roe@example.com", "the e-mail on file", "(415) 555-2671", "the phone on file",
		"4111 1111 1111 1111", "the card on file", "ops.lead@corp-example.com", "the operations lead")
	for _, bc := range []struct{ name, prompt, answer string }{
		{"entities", agBenchPrompt, agBenchAnswer},                            // redactions both ways: audit record and a redaction.applied event
		{"clean", clean.Replace(agBenchPrompt), clean.Replace(agBenchAnswer)}, // nothing to redact: the audit record only
	} {
		b.Run(bc.name, func(b *testing.B) { agChatOverhead(b, bc.prompt, bc.answer) })
	}
}

func agChatOverhead(b *testing.B, prompt, answer string) {
	e := agStart(b, false, nil)
	e.oai.SetReply(providertest.Reply{Content: answer})
	gwBody, _ := json.Marshal(agChat("gpt", false, "user", prompt))
	gwURL := e.URL + "/ai-gateway/v1/chat"

	// The direct request is the one the gateway sends upstream (redacted prompt included).
	if r := e.Do("POST", "/ai-gateway/v1/chat", e.tok, agChat("gpt", false, "user", prompt)); r.Status != 200 {
		b.Fatalf("POST /chat: %d %s", r.Status, r.Body)
	}
	upBody := e.oai.Requests()[0].Body
	upURL := e.oai.URL + "/chat/completions"

	post := func(url, token string, body []byte) time.Duration {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		t0 := time.Now()
		resp, err := e.Client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if resp.StatusCode != 200 {
			b.Fatalf("POST %s: %d", url, resp.StatusCode)
		}
		return d
	}
	for range 200 { // warm up: connections, caches, the project's compiled policy
		post(upURL, e.oai.Key(), upBody)
		post(gwURL, e.tok, gwBody)
	}
	before := agHistogram(agMetrics(b, e.Server), "edgewan_aigw_overhead_seconds")
	var direct, gw, diff []time.Duration
	b.ResetTimer()
	for range b.N {
		d := post(upURL, e.oai.Key(), upBody)
		g := post(gwURL, e.tok, gwBody)
		direct, gw, diff = append(direct, d), append(gw, g), append(diff, g-d)
	}
	b.StopTimer()
	after := agHistogram(agMetrics(b, e.Server), "edgewan_aigw_overhead_seconds")
	d50, d99 := agPercentile(direct, 50), agPercentile(direct, 99)
	g50, g99 := agPercentile(gw, 50), agPercentile(gw, 99)
	b.ReportMetric(agMicros(d50), "direct-p50-us")
	b.ReportMetric(agMicros(d99), "direct-p99-us")
	b.ReportMetric(agMicros(g50), "gw-p50-us")
	b.ReportMetric(agMicros(g99), "gw-p99-us")
	b.ReportMetric(agMicros(g50-d50), "overhead-p50-us")
	b.ReportMetric(agMicros(g99-d99), "overhead-p99-us")
	b.ReportMetric(agMicros(agPercentile(diff, 50)), "pairdiff-p50-us")
	b.ReportMetric(agMicros(agPercentile(diff, 99)), "pairdiff-p99-us")
	b.ReportMetric(agQuantile(before, after, 0.50)*1e6, "hist-p50-us")
	b.ReportMetric(agQuantile(before, after, 0.99)*1e6, "hist-p99-us")
	b.ReportMetric(0, "ns/op") // the loop times two requests; the figures above are what count
}

// agFirst sends a streaming request and returns the time until the first event for which
// first is true. It reads the stream to its end, so that the connection is reused (hanging up
// would add a TLS handshake to the next request through the gateway).
func agFirst(b *testing.B, c *http.Client, url, token string, body []byte, first func(name, data string) bool) time.Duration {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		raw, _ := io.ReadAll(resp.Body)
		b.Fatalf("POST %s: %d %s", url, resp.StatusCode, raw)
	}
	br := bufio.NewReader(resp.Body)
	var name, data string
	var ttft time.Duration
	for {
		line, err := br.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "" && data != "":
			if ttft == 0 && first(name, data) {
				ttft = time.Since(t0)
			}
			name, data = "", ""
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "data:"):
			data += strings.TrimSpace(line[len("data:"):])
		}
		if err == io.EOF && ttft > 0 {
			return ttft
		}
		if err != nil {
			b.Fatalf("POST %s: the stream ended (%v) before its first text", url, err)
		}
	}
}

// BenchmarkAIGWStreamTTFT measures the time to first token that streaming redaction adds: the
// first "delta" event of POST /chat (stream) through the controller over HTTPS against the
// first chunk with text straight from the fake OpenAI upstream, for an answer of ~6-byte
// words. The redactor holds back a window (default 128 bytes) and the word still arriving, so
// what it adds is about the time the model takes to produce that much text: measured with an
// upstream that sends everything at once (pace 0) and with models producing a word every 2 ms
// and every 10 ms (100 words/s), with the default window and the smallest (64). Target: < 50 ms.
func BenchmarkAIGWStreamTTFT(b *testing.B) {
	for _, bc := range []struct {
		pace   time.Duration
		window int
	}{
		{0, 0}, {2 * time.Millisecond, 0}, {10 * time.Millisecond, 0}, {10 * time.Millisecond, 64},
	} {
		name := fmt.Sprintf("pace=%v/window=default", bc.pace)
		if bc.window != 0 {
			name = fmt.Sprintf("pace=%v/window=%d", bc.pace, bc.window)
		}
		b.Run(name, func(b *testing.B) {
			e := agStart(b, false, nil)
			if bc.window != 0 {
				r := e.Do("POST", "/ai-gateway/v1/policies", e.admin, map[string]any{"name": "w",
					"content": json.RawMessage(fmt.Sprintf(`{"output":{"stream_window":%d}}`, bc.window))})
				var p struct{ ID string }
				if r.Status != 201 || json.Unmarshal(r.Body, &p) != nil {
					b.Fatalf("creating the policy: %d %s", r.Status, r.Body)
				}
				if r := e.Do("POST", "/ai-gateway/v1/policies/"+p.ID+"/publish", e.admin, map[string]any{"version": 1}); r.Status != 200 {
					b.Fatalf("publishing: %d %s", r.Status, r.Body)
				}
			}
			e.oai.SetReply(providertest.Reply{Content: strings.Repeat("The model writes this answer word by word. ", 8), Pace: bc.pace})
			gwBody, _ := json.Marshal(agChat("gpt", true, "user", agBenchPrompt))
			upBody, _ := json.Marshal(map[string]any{"model": "up-gpt", "stream": true, "messages": agMsgs("user", "hi")})
			gwFirst := func(name, _ string) bool { return name == "delta" }
			upFirst := func(_, data string) bool {
				var c struct {
					Choices []struct {
						Delta struct{ Content string } `json:"delta"`
					} `json:"choices"`
				}
				return json.Unmarshal([]byte(data), &c) == nil && len(c.Choices) > 0 && c.Choices[0].Delta.Content != ""
			}
			for range 5 { // warm up
				agFirst(b, e.Client, e.oai.URL+"/chat/completions", e.oai.Key(), upBody, upFirst)
				agFirst(b, e.Client, e.URL+"/ai-gateway/v1/chat", e.tok, gwBody, gwFirst)
			}
			var direct, gw []time.Duration
			b.ResetTimer()
			for range b.N {
				direct = append(direct, agFirst(b, e.Client, e.oai.URL+"/chat/completions", e.oai.Key(), upBody, upFirst))
				gw = append(gw, agFirst(b, e.Client, e.URL+"/ai-gateway/v1/chat", e.tok, gwBody, gwFirst))
			}
			b.StopTimer()
			d50, g50 := agPercentile(direct, 50), agPercentile(gw, 50)
			d99, g99 := agPercentile(direct, 99), agPercentile(gw, 99)
			b.ReportMetric(float64(d50.Microseconds())/1e3, "direct-ttft-p50-ms")
			b.ReportMetric(float64(g50.Microseconds())/1e3, "gw-ttft-p50-ms")
			b.ReportMetric(float64((g50-d50).Microseconds())/1e3, "extra-ttft-p50-ms")
			b.ReportMetric(float64((g99-d99).Microseconds())/1e3, "extra-ttft-p99-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}
