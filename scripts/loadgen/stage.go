package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgewan/edgewan/agent/claim"
)

// state is what survives between runs (the --state file): the claimed sites and their agents'
// MQTT credentials, so a re-run against the same controller skips pre-staging and claiming.
type state struct {
	API      string      `json:"api"`
	MQTTURL  string      `json:"mqtt_url"`
	CAPEM    string      `json:"ca_pem"`
	Policy   string      `json:"policy,omitempty"`   // the steering policy's ID
	Policied int         `json:"policied,omitempty"` // sites (from the first) it was published to
	Sites    []siteState `json:"sites"`
}

// siteState is one site: pre-staged (ID and Claim), then claimed (Device, Password).
type siteState struct {
	Name     string `json:"name"`
	ID       string `json:"id,omitempty"`
	Claim    string `json:"claim_token,omitempty"` // until claimed
	Device   string `json:"device,omitempty"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
}

func (s *siteState) claimed() bool { return s.Password != "" }

func loadState(path string) (*state, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &state{}, nil
	}
	if err != nil {
		return nil, err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &st, nil
}

// save writes the state atomically (it holds passwords: 0600).
func (st *state) save(path string) error {
	b, err := json.MarshalIndent(st, "", " ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".loadgen-state-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// api is the controller's HTTPS API as the load generator uses it.
type api struct {
	base  string
	token string
	hc    *http.Client
}

// apiError is a non-2xx answer.
type apiError struct {
	Status int
	Code   string
	Body   string
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Code, e.Body) }

// do sends a JSON request and decodes a JSON answer into out. 429s are waited out (Retry-After)
// and transport errors and 5xx retried, a few times, within ctx.
func (a *api) do(ctx context.Context, method, path string, auth bool, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	var last error
	for attempt := 0; attempt < 8; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		if auth {
			req.Header.Set("Authorization", "Bearer "+a.token)
		}
		resp, err := a.hc.Do(req)
		if err != nil {
			last = err
			if ctx.Err() != nil {
				return ctx.Err()
			}
			sleep(ctx, time.Duration(attempt+1)*200*time.Millisecond)
			continue
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			wait := time.Second
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
				wait = time.Duration(s) * time.Second
			}
			last = &apiError{Status: resp.StatusCode, Body: strings.TrimSpace(string(raw))}
			sleep(ctx, wait)
			attempt-- // rate limiting is not a failure; ctx bounds the wait
			continue
		case resp.StatusCode >= 500:
			last = &apiError{Status: resp.StatusCode, Body: strings.TrimSpace(string(raw))}
			sleep(ctx, time.Duration(attempt+1)*200*time.Millisecond)
			continue
		case resp.StatusCode >= 300:
			var eb struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			_ = json.Unmarshal(raw, &eb)
			return &apiError{Status: resp.StatusCode, Code: eb.Error.Code, Body: strings.TrimSpace(string(raw))}
		}
		if out != nil {
			if err := json.Unmarshal(raw, out); err != nil {
				return fmt.Errorf("%s %s: %w", method, path, err)
			}
		}
		return nil
	}
	return fmt.Errorf("%s %s: %w", method, path, last)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// createSiteReq is the body of POST /sd-wan/v1/sites: three transports, cheapest first.
type createSiteReq struct {
	Name       string         `json:"name"`
	Transports []transportReq `json:"transports"`
}

type transportReq struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Interface string `json:"interface"`
	Cost      int    `json:"cost"`
}

var siteTransports = []transportReq{
	{Name: "mpls", Kind: "mpls", Interface: "eth1", Cost: 10},
	{Name: "inet", Kind: "broadband", Interface: "eth2", Cost: 20},
	{Name: "lte", Kind: "lte", Interface: "wwan0", Cost: 30},
}

// steeringPolicy is published to every site so that each report is judged against SLAs: two
// classes over the three transports.
var steeringPolicy = json.RawMessage(`{"classes":[{"name":"voice","max_latency_ms":150,"max_loss_pct":2,"max_jitter_ms":30},` +
	`{"name":"bulk","max_latency_ms":400,"max_loss_pct":5}],"paths":{"voice":["mpls","inet","lte"],"bulk":["inet","mpls","lte"]},"default_class":"bulk"}`)

type stager struct {
	a       *api
	st      *state
	path    string
	workers int
	prefix  string

	mu    sync.Mutex // guards st.Sites entries and saving
	dirty bool
}

// stage pre-stages and claims the sites missing from the state, n in all, with workers at a
// time, saving the state every few seconds and at the end.
func (s *stager) stage(ctx context.Context, n int) error {
	for len(s.st.Sites) < n {
		s.st.Sites = append(s.st.Sites, siteState{Name: fmt.Sprintf("%s-%05d", s.prefix, len(s.st.Sites))})
	}
	var todo []int
	for i := 0; i < n; i++ {
		if !s.st.Sites[i].claimed() {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		log.Printf("stage: all %d sites already claimed (state %s)", n, s.path)
		return nil
	}
	log.Printf("stage: pre-staging and claiming %d of %d sites with %d workers", len(todo), n, s.workers)
	start := time.Now()
	var next, done, failed atomic.Int64
	var firstErr error
	var errOnce sync.Once
	stopSaver := make(chan struct{})
	saverDone := make(chan struct{})
	go func() { // saves progress and logs it
		defer close(saverDone)
		t := time.NewTicker(3 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopSaver:
				return
			case <-t.C:
				if err := s.save(); err != nil {
					log.Printf("stage: saving state: %v", err)
				}
				log.Printf("stage: %d/%d claimed (%.0f/s), %d failed", done.Load(), len(todo), float64(done.Load())/time.Since(start).Seconds(), failed.Load())
			}
		}
	}()
	var wg sync.WaitGroup
	for range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				k := int(next.Add(1)) - 1
				if k >= len(todo) {
					return
				}
				if err := s.one(ctx, todo[k]); err != nil {
					failed.Add(1)
					errOnce.Do(func() { firstErr = err })
					if failed.Load() > 20 {
						return // something is wrong; do not hammer the API
					}
					continue
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stopSaver)
	<-saverDone
	if err := s.save(); err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	log.Printf("stage: %d claimed in %s (%.0f sites/s), %d failed", done.Load(), time.Since(start).Round(time.Millisecond),
		float64(done.Load())/time.Since(start).Seconds(), failed.Load())
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if firstErr != nil {
		return fmt.Errorf("%d sites failed, first: %w (re-run to resume)", failed.Load(), firstErr)
	}
	return nil
}

// one pre-stages (unless the state has its claim token) and claims site i.
func (s *stager) one(ctx context.Context, i int) error {
	s.mu.Lock()
	ss := s.st.Sites[i]
	s.mu.Unlock()
	if ss.Claim == "" {
		var site struct {
			ID    string `json:"id"`
			Claim string `json:"claim_token"`
		}
		err := s.a.do(ctx, http.MethodPost, "/sd-wan/v1/sites", true, createSiteReq{Name: ss.Name, Transports: siteTransports}, &site)
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusConflict {
			// Created by an earlier attempt whose answer (and claim token) was lost: take a new name.
			ss.Name = fmt.Sprintf("%s-r%d", ss.Name, time.Now().UnixNano()%1e6)
			err = s.a.do(ctx, http.MethodPost, "/sd-wan/v1/sites", true, createSiteReq{Name: ss.Name, Transports: siteTransports}, &site)
		}
		if err != nil {
			return fmt.Errorf("creating site %s: %w", ss.Name, err)
		}
		ss.ID, ss.Claim = site.ID, site.Claim
		s.set(i, ss)
	}
	var res claim.Response
	err := s.a.do(ctx, http.MethodPost, "/sd-wan/v1/claim", false, map[string]string{"claim_token": ss.Claim, "hostname": ss.Name, "version": "loadgen"}, &res)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
		// Used or expired (a claim whose answer was lost): pre-stage this one again next run.
		s.set(i, siteState{Name: ss.Name + "-x"})
		return fmt.Errorf("claiming site %s: %w (it will be pre-staged again on the next run)", ss.Name, err)
	}
	if err != nil {
		return fmt.Errorf("claiming site %s: %w", ss.Name, err)
	}
	ss.ID, ss.Claim, ss.Device, ss.Username, ss.Password = res.Site.ID, "", res.Device, res.MQTT.Username, res.MQTT.Password
	s.mu.Lock()
	s.st.Sites[i] = ss
	if s.st.MQTTURL == "" || s.st.CAPEM == "" {
		s.st.MQTTURL, s.st.CAPEM = res.MQTT.URL, res.MQTT.CAPEM
	}
	s.dirty = true
	s.mu.Unlock()
	return nil
}

func (s *stager) set(i int, ss siteState) {
	s.mu.Lock()
	s.st.Sites[i] = ss
	s.dirty = true
	s.mu.Unlock()
}

func (s *stager) save() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dirty {
		return nil
	}
	if err := s.st.save(s.path); err != nil {
		return err
	}
	s.dirty = false
	return nil
}

// publishPolicy creates the steering policy (once) and publishes its version 1 to the first n
// sites, in chunks, resuming where the state says it stopped.
func (s *stager) publishPolicy(ctx context.Context, n int) error {
	if s.st.Policied >= n {
		return nil
	}
	start := time.Now()
	if s.st.Policy == "" {
		var p struct {
			ID string `json:"id"`
		}
		name := fmt.Sprintf("%s-steering-%d", s.prefix, time.Now().Unix())
		if err := s.a.do(ctx, http.MethodPost, "/sd-wan/v1/policies", true,
			map[string]any{"name": name, "type": "steering", "content": steeringPolicy, "comment": "loadgen"}, &p); err != nil {
			return fmt.Errorf("creating the steering policy: %w", err)
		}
		s.st.Policy, s.st.Policied = p.ID, 0
		s.dirty = true
		if err := s.save(); err != nil {
			return err
		}
	}
	const chunk = 1000
	for s.st.Policied < n {
		hi := min(s.st.Policied+chunk, n)
		ids := make([]string, 0, hi-s.st.Policied)
		for _, ss := range s.st.Sites[s.st.Policied:hi] {
			ids = append(ids, ss.ID)
		}
		if err := s.a.do(ctx, http.MethodPost, "/sd-wan/v1/policies/"+s.st.Policy+"/publish", true,
			map[string]any{"version": 1, "sites": ids, "comment": "loadgen"}, nil); err != nil {
			return fmt.Errorf("publishing the steering policy to sites %d..%d: %w", s.st.Policied, hi-1, err)
		}
		s.st.Policied = hi
		s.dirty = true
		if err := s.save(); err != nil {
			return err
		}
	}
	log.Printf("stage: steering policy %s published to %d sites in %s", s.st.Policy, n, time.Since(start).Round(time.Millisecond))
	return nil
}
