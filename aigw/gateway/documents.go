package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgewan/edgewan/aigw/document"
	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/event"
	"github.com/edgewan/edgewan/coreapi/ids"
	"github.com/edgewan/edgewan/coreapi/page"
)

// Document statuses.
const (
	DocProcessing = "processing"
	DocCaptured   = "captured"
	DocFailed     = "failed"
)

// Work the document worker still has to do on a document.
const (
	WorkNone    = ""
	WorkExtract = "extract" // the upload waits for extraction (asynchronous capture)
	WorkDeliver = "deliver" // the result waits to be POSTed to its destination URL
)

// Document is a captured document as the API shows it: everything in it is redacted.
type Document struct {
	ID             string          `json:"id"`
	Project        string          `json:"project"`
	KeyID          string          `json:"key"`
	RequestID      string          `json:"request_id"` // the upload's request ID
	Filename       string          `json:"filename,omitempty"`
	ContentType    string          `json:"content_type"` // sniffed from the bytes
	Kind           string          `json:"kind"`         // pdf, image, text
	Size           int64           `json:"size"`
	PageCount      int             `json:"page_count"`
	Status         string          `json:"status"`           // processing, captured, failed
	Reason         string          `json:"reason,omitempty"` // why it failed
	Type           string          `json:"type,omitempty"`   // invoice, receipt, id, letter, form, unknown
	TypeConfidence float64         `json:"type_confidence,omitempty"`
	Pages          []DocumentPage  `json:"pages"`
	Fields         []DocumentField `json:"fields"`
	Redactions     []Redaction     `json:"redactions"`
	Blocked        bool            `json:"blocked"`
	Findings       []Finding       `json:"findings"`
	Destination    *Destination    `json:"destination,omitempty"`
	Policy         *PolicyRef      `json:"policy,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
}

// DocumentPage is one page's redacted text and how it was read.
type DocumentPage struct {
	Page       int     `json:"page"`
	Method     string  `json:"method"` // pdftotext, pdf-go, ocr, text
	Confidence float64 `json:"confidence"`
	Text       string  `json:"text"`
}

// DocumentField is a structured field, redacted per the project's policy.
type DocumentField struct {
	Name       string  `json:"name"`
	Value      string  `json:"value"`
	Normalized string  `json:"normalized,omitempty"` // dropped when the value was redacted
	Entity     string  `json:"entity,omitempty"`
	Action     string  `json:"action,omitempty"` // what the policy did to the value, if it is personal data
	Page       int     `json:"page"`
	Confidence float64 `json:"confidence"`
}

// Destination is where a captured document is sent besides the API: the webhook event
// document.captured carries the result when Webhook is set, and URL (a CRM endpoint) receives
// it by POST.
type Destination struct {
	Webhook     bool      `json:"webhook"`
	URL         string    `json:"url,omitempty"`
	Status      string    `json:"status,omitempty"` // pending, delivered, failed (URL only)
	Attempts    int       `json:"attempts,omitempty"`
	Error       string    `json:"error,omitempty"`
	DeliveredAt time.Time `json:"delivered_at,omitzero"`
}

// DocumentFilter selects documents.
type DocumentFilter struct {
	Project string
	Status  string
	Type    string
}

// DocumentStore is what document capture needs of the database.
type DocumentStore interface {
	// InsertDocument stores a document, the sealed upload the worker still needs (or ""), the
	// work left, and its events, in one transaction; it returns the deliveries queued.
	InsertDocument(ctx context.Context, d *Document, work, blob string, evs []*event.Envelope) (int, error)
	// FinishDocument stores the document's new state and work if it was claimed by this lease
	// (claimedUntil), dropping the upload; false when another worker took it over.
	FinishDocument(ctx context.Context, d *Document, claimedUntil time.Time, work string, evs []*event.Envelope) (bool, int, error)
	GetDocument(ctx context.Context, id string) (*Document, error)
	ListDocuments(ctx context.Context, p page.Params, f DocumentFilter) ([]*Document, error)
	// ClaimDocument leases the oldest document with work whose lease has ended, until
	// until, counting the attempt; nil when there is none.
	ClaimDocument(ctx context.Context, now, until time.Time) (*ClaimedDocument, error)
	// ReleaseDocument ends a lease without doing the work (the controller is stopping), not
	// counting the attempt.
	ReleaseDocument(ctx context.Context, id string, claimedUntil time.Time) error
}

// ClaimedDocument is a document leased to a worker.
type ClaimedDocument struct {
	Doc          *Document
	Work         string
	Blob         string // the sealed upload (extract)
	Attempts     int    // including this one
	ClaimedUntil time.Time
}

// DocumentOptions configure document capture (Options.Documents).
type DocumentOptions struct {
	Extract       document.Options
	AsyncBytes    int64         // uploads larger than this are processed asynchronously; default 1 MiB
	AsyncPages    int           // as are documents with more pages; default 5
	Lease         time.Duration // how long a worker holds a document; default 15 minutes
	MaxAttempts   int           // extractions tried before a document fails; default 3
	AllowHTTP     bool          // accept http:// destination URLs to loopback addresses (development)
	DeliveryTries int           // POSTs to a destination URL; default 5
	Client        *http.Client  // for destination URLs; default a client with a 10s timeout
	Concurrency   int           // extractions at once (requests and the worker together); default the number of CPUs
}

const maxFilename = 255

func (o *DocumentOptions) defaults() {
	if o.AsyncBytes <= 0 {
		o.AsyncBytes = 1 << 20
	}
	if o.AsyncPages <= 0 {
		o.AsyncPages = 5
	}
	if o.Lease <= 0 {
		o.Lease = 15 * time.Minute
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.Concurrency <= 0 {
		o.Concurrency = runtime.NumCPU()
	}
	if o.DeliveryTries <= 0 {
		o.DeliveryTries = 5
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
}

// Upload is a document upload (POST /documents, multipart).
type Upload struct {
	Project        string
	Filename       string
	Data           []byte
	DestinationURL string
	Webhook        bool // the document.captured event carries the result
	Async          bool // process asynchronously whatever the size
}

// documentErr maps the extractor's errors to the API's statuses.
func documentErr(err error) error {
	switch {
	case errors.Is(err, document.ErrTooLarge):
		return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeTooLarge, "%v", err)
	case errors.Is(err, document.ErrUnsupported):
		return apierr.New(http.StatusUnsupportedMediaType, apierr.CodeUnsupportedMedia, "%v", err)
	case errors.Is(err, document.ErrCorrupt), errors.Is(err, document.ErrEncrypted), errors.Is(err, document.ErrEmpty), errors.Is(err, document.ErrNoOCR):
		return apierr.Invalid("%v", err)
	}
	return err
}

// reason is what a failed document says about why.
func reason(err error) string {
	if e := (*apierr.Error)(nil); errors.As(documentErr(err), &e) && e.Status < 500 {
		return e.Message
	}
	return "internal error while extracting the document: " + err.Error()
}

func (s *Service) documentsOn() error {
	if s.o.Documents == nil {
		return apierr.New(http.StatusServiceUnavailable, apierr.CodeUnavailable, "document capture is not configured on this controller")
	}
	return nil
}

func (s *Service) checkDestination(raw string) error {
	if raw == "" {
		return nil
	}
	if len(raw) > 2048 {
		return apierr.BadRequest("destination_url is longer than 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return apierr.BadRequest("destination_url %q is not an absolute URL", raw)
	}
	if u.User != nil {
		return apierr.BadRequest("destination_url must not carry credentials")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		ip := net.ParseIP(host)
		if s.docOpts.AllowHTTP && (host == "localhost" || ip != nil && ip.IsLoopback()) {
			return nil
		}
	}
	return apierr.BadRequest("destination_url must use https")
}

// CaptureDocument checks an upload and captures it: at once (captured: true) when it is small,
// else it is stored for the worker and answered with its ID (captured: false). Corrupt,
// encrypted, empty, unsupported and oversize files are refused before anything is stored.
func (s *Service) CaptureDocument(ctx context.Context, c Caller, requestID string, up Upload) (*Document, bool, error) {
	if err := s.documentsOn(); err != nil {
		return nil, false, err
	}
	if err := s.checkProject(c, up.Project); err != nil {
		return nil, false, err
	}
	if len(up.Filename) > maxFilename || strings.ContainsAny(up.Filename, "\x00\r\n") {
		return nil, false, apierr.BadRequest("the file name must be at most %d bytes on one line", maxFilename)
	}
	if err := s.checkDestination(up.DestinationURL); err != nil {
		return nil, false, err
	}
	info, err := s.extractor.Inspect(ctx, up.Data)
	if err != nil {
		s.mDocs.WithLabelValues("refused").Inc()
		return nil, false, documentErr(err)
	}
	cg, err := s.guardFor(ctx, up.Project)
	if err != nil {
		return nil, false, err
	}
	now := s.o.Now().UTC().Truncate(time.Microsecond)
	d := &Document{ID: ids.New("doc"), Project: cg.project.ID, KeyID: c.KeyID, RequestID: requestID, Filename: up.Filename,
		ContentType: info.ContentType, Kind: info.Kind, Size: int64(len(up.Data)), PageCount: info.Pages, Status: DocProcessing,
		Pages: []DocumentPage{}, Fields: []DocumentField{}, Redactions: []Redaction{}, Findings: []Finding{}, CreatedAt: now, UpdatedAt: now}
	if up.Webhook || up.DestinationURL != "" {
		d.Destination = &Destination{Webhook: up.Webhook, URL: up.DestinationURL}
	}
	if up.Async || int64(len(up.Data)) > s.docOpts.AsyncBytes || info.Pages > s.docOpts.AsyncPages {
		if _, err := s.o.Documents.InsertDocument(ctx, d, WorkExtract, s.seal.Seal(d.ID, up.Data), nil); err != nil {
			return nil, false, err
		}
		s.mDocs.WithLabelValues("queued").Inc()
		s.wakeWorker()
		return d, false, nil
	}
	res, err := s.extract(ctx, up.Data, info)
	if err != nil {
		s.mDocs.WithLabelValues("refused").Inc()
		return nil, false, documentErr(err)
	}
	evs := s.fill(d, cg, res)
	work := WorkNone
	if d.Destination != nil && d.Destination.URL != "" {
		work, d.Destination.Status = WorkDeliver, "pending"
	}
	n, err := s.o.Documents.InsertDocument(ctx, d, work, "", evs)
	if err != nil {
		return nil, false, err
	}
	if n > 0 {
		s.o.Notify()
	}
	if work != WorkNone {
		s.wakeWorker()
	}
	return d, true, nil
}

// fill redacts an extraction into d (captured) and returns the events to store with it.
func (s *Service) fill(d *Document, cg *cachedGuard, res *document.Result) []*event.Envelope {
	sess := cg.guard.NewSession()
	d.Status, d.Reason, d.PageCount = DocCaptured, "", len(res.Pages)
	d.Type, d.TypeConfidence = document.Classify(res.Text())
	d.Policy = &PolicyRef{cg.policyID, cg.version}
	d.Pages, d.Fields, d.Redactions, d.Findings = []DocumentPage{}, []DocumentField{}, []Redaction{}, []Finding{}
	fields := document.Fields(s.engine, res.Pages)
	for _, p := range res.Pages {
		where := fmt.Sprintf("page[%d]", p.Number)
		r := sess.Document(p.Text)
		d.Pages = append(d.Pages, DocumentPage{Page: p.Number, Method: p.Method, Confidence: p.Confidence, Text: r.Text})
		reds := convRedactions(where, r.Redactions)
		d.Redactions = append(d.Redactions, reds...)
		d.Findings = append(d.Findings, convFindings(where, r.Findings)...)
		d.Blocked = d.Blocked || r.Blocked
		for _, f := range fields {
			if f.Page != p.Number {
				continue
			}
			df := DocumentField{Name: f.Name, Value: f.Value, Normalized: f.Normalized, Entity: f.Entity, Page: f.Page, Confidence: f.Confidence}
			// The page's redactions that touch the field replace the parts they cover.
			redacted, action := overlay(p.Text, f.Start, f.End, reds)
			if action != "" {
				df.Value, df.Action = redacted, action
				if df.Entity == "" {
					df.Entity = entityOf(reds, f.Start, f.End)
				}
			} else if f.Entity != "" {
				// Labelled personal data the detectors did not report: the policy's action for
				// its type applies all the same.
				red, hit := sess.Field(f.Entity, f.Value)
				df.Action = string(red.Action)
				if red.Action != "allow" {
					df.Value = red.Replacement
				}
				i := len(d.Fields)
				d.Redactions = append(d.Redactions, Redaction{Type: red.Type, Action: string(red.Action), Placeholder: red.Replacement,
					Start: 0, End: len(f.Value), Score: f.Confidence, Where: fmt.Sprintf("fields[%d]", i)})
				if hit {
					d.Blocked = true
					d.Findings = append(d.Findings, Finding{Rule: "entities." + f.Entity, Kind: "entity", Where: fmt.Sprintf("fields[%d]", i)})
				}
			}
			if df.Action != "" && df.Action != "allow" {
				df.Normalized = ""
			}
			d.Fields = append(d.Fields, df)
		}
	}
	for _, x := range d.Redactions {
		s.mRedacted.WithLabelValues(x.Type, x.Action).Inc()
	}
	for _, p := range d.Pages {
		s.mPages.WithLabelValues(p.Method).Inc()
	}
	s.mDocs.WithLabelValues("captured").Inc()
	ev, err := event.NewAt(event.DocumentCaptured, s.capturedData(d), s.o.Now())
	if err != nil {
		return nil
	}
	return []*event.Envelope{ev}
}

// capturedData is document.captured's data: a summary, and the redacted result when the
// upload asked for it (destination webhook).
func (s *Service) capturedData(d *Document) map[string]any {
	names := map[string]int{}
	for _, f := range d.Fields {
		names[f.Name]++
	}
	entities := map[string]int{}
	for _, r := range d.Redactions {
		entities[r.Type]++
	}
	data := map[string]any{"document_id": d.ID, "project": d.Project, "request_id": d.RequestID, "type": d.Type,
		"kind": d.Kind, "pages": d.PageCount, "fields": names, "entities": entities, "blocked": d.Blocked}
	if d.Policy != nil {
		data["policy"], data["policy_version"] = d.Policy.ID, d.Policy.Version
	}
	if d.Destination != nil && d.Destination.Webhook {
		data["result"] = map[string]any{"type": d.Type, "type_confidence": d.TypeConfidence, "fields": d.Fields, "pages": d.Pages}
	}
	return data
}

// overlay returns text[start:end] with the redactions that overlap it applied, and the
// strictest action among them ("" when none touches it).
func overlay(text string, start, end int, reds []Redaction) (string, string) {
	var b strings.Builder
	pos, action := start, ""
	for _, r := range reds {
		if r.End <= start || r.Start >= end {
			continue
		}
		if action == "" || r.Action != "allow" {
			action = r.Action
		}
		if r.Action == "allow" {
			continue
		}
		if r.Start > pos {
			b.WriteString(text[pos:r.Start])
		}
		if r.Start >= pos || pos == start {
			b.WriteString(r.Placeholder)
		}
		pos = max(pos, min(r.End, end))
	}
	if action == "" {
		return text[start:end], ""
	}
	if pos < end {
		b.WriteString(text[pos:end])
	}
	if action == "allow" {
		return text[start:end], action
	}
	return b.String(), action
}

func entityOf(reds []Redaction, start, end int) string {
	for _, r := range reds {
		if r.End > start && r.Start < end {
			return r.Type
		}
	}
	return ""
}

// GetDocument returns a document of the caller's project.
func (s *Service) GetDocument(ctx context.Context, c Caller, id string) (*Document, error) {
	if err := s.documentsOn(); err != nil {
		return nil, err
	}
	d, err := s.o.Documents.GetDocument(ctx, id)
	if err != nil {
		return nil, err
	}
	if d.Project != c.Project {
		return nil, apierr.NotFound("document %q not found", id)
	}
	return d, nil
}

// ListDocuments lists the caller's project's documents.
func (s *Service) ListDocuments(ctx context.Context, c Caller, p page.Params, f DocumentFilter) ([]*Document, error) {
	if err := s.documentsOn(); err != nil {
		return nil, err
	}
	f.Project = c.Project
	switch f.Status {
	case "", DocProcessing, DocCaptured, DocFailed:
	default:
		return nil, apierr.BadRequest("status must be processing, captured or failed; got %q", f.Status)
	}
	switch f.Type {
	case "", document.TypeInvoice, document.TypeReceipt, document.TypeID, document.TypeLetter, document.TypeForm, document.TypeUnknown:
	default:
		return nil, apierr.BadRequest("type must be invoice, receipt, id, letter, form or unknown; got %q", f.Type)
	}
	return s.o.Documents.ListDocuments(ctx, p, f)
}

// ---- the worker ----

func (s *Service) wakeWorker() {
	select {
	case s.docWake <- struct{}{}:
	default:
	}
}

// runDocuments works through documents with work left until ctx ends: the ones queued
// before a restart first, then each new one as it is queued (and every minute, for leases that
// ended).
func (s *Service) runDocuments(ctx context.Context) {
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		for ctx.Err() == nil {
			did, err := s.workOne(ctx)
			if err != nil && ctx.Err() == nil {
				slog.Error("gateway: document worker", "err", err)
				break
			}
			if !did {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.docWake:
		case <-tick.C:
		}
	}
}

// workOne claims and does one piece of work; false when there was none.
func (s *Service) workOne(ctx context.Context) (bool, error) {
	now := s.o.Now().UTC().Truncate(time.Microsecond)
	cd, err := s.o.Documents.ClaimDocument(ctx, now, now.Add(s.docOpts.Lease))
	if err != nil || cd == nil {
		return false, err
	}
	d := cd.Doc
	switch cd.Work {
	case WorkExtract:
		s.extractClaimed(ctx, cd)
	case WorkDeliver:
		s.deliver(ctx, d)
		if ctx.Err() != nil && d.Destination.Status != "delivered" {
			// Stopping: the next start tries again (the attempts made so far are not kept).
			return true, s.o.Documents.ReleaseDocument(context.WithoutCancel(ctx), d.ID, cd.ClaimedUntil)
		}
		if _, n, err := s.o.Documents.FinishDocument(ctx, d, cd.ClaimedUntil, WorkNone, nil); err != nil {
			return true, err
		} else if n > 0 {
			s.o.Notify()
		}
	default: // nothing to do: release it
		_, _, err := s.o.Documents.FinishDocument(ctx, d, cd.ClaimedUntil, WorkNone, nil)
		return true, err
	}
	return true, nil
}

// extractClaimed extracts a queued upload and stores the outcome: captured, failed with the
// reason, or, if the controller is stopping, left queued for the next start.
func (s *Service) extractClaimed(ctx context.Context, cd *ClaimedDocument) {
	d := cd.Doc
	fail := func(why string) {
		s.mDocs.WithLabelValues("failed").Inc()
		d.Status, d.Reason = DocFailed, why
		d.UpdatedAt = s.o.Now().UTC().Truncate(time.Microsecond)
		if _, _, err := s.o.Documents.FinishDocument(context.WithoutCancel(ctx), d, cd.ClaimedUntil, WorkNone, nil); err != nil {
			slog.Error("gateway: storing a failed document", "document", d.ID, "err", err)
		}
	}
	defer func() {
		// A panic in a document reader must not take the controller down with it.
		if x := recover(); x != nil {
			slog.Error("gateway: document worker panicked", "document", d.ID, "panic", x)
			fail(fmt.Sprintf("internal error while extracting the document: %v", x))
		}
	}()
	if cd.Attempts > s.docOpts.MaxAttempts {
		fail(fmt.Sprintf("extraction was interrupted %d times (the controller stopped or the worker ran out of time); upload it again", cd.Attempts-1))
		return
	}
	data, err := s.seal.Open(d.ID, cd.Blob)
	if err != nil {
		fail("the upload kept for processing cannot be read (was the audit key replaced?); upload it again")
		return
	}
	res, err := s.extract(ctx, data, nil)
	if ctx.Err() != nil {
		// Stopping: give the document back, so that the next start resumes it at once.
		if err := s.o.Documents.ReleaseDocument(context.WithoutCancel(ctx), d.ID, cd.ClaimedUntil); err != nil {
			slog.Warn("gateway: releasing a document at shutdown; it is resumed when its lease ends", "document", d.ID, "err", err)
		}
		return
	}
	if err != nil {
		fail(reason(err))
		return
	}
	cg, err := s.guardFor(ctx, d.Project)
	if err != nil {
		slog.Error("gateway: document worker: project", "document", d.ID, "err", err)
		return // retried when the lease ends
	}
	evs := s.fill(d, cg, res)
	d.UpdatedAt = s.o.Now().UTC().Truncate(time.Microsecond)
	work := WorkNone
	if d.Destination != nil && d.Destination.URL != "" {
		work, d.Destination.Status = WorkDeliver, "pending"
	}
	_, n, err := s.o.Documents.FinishDocument(context.WithoutCancel(ctx), d, cd.ClaimedUntil, work, evs)
	if err != nil {
		slog.Error("gateway: storing a captured document", "document", d.ID, "err", err)
		return
	}
	if n > 0 {
		s.o.Notify()
	}
	if work != WorkNone {
		s.wakeWorker()
	}
}

// deliver POSTs the captured document to its destination URL, retrying with backoff, and
// records the outcome in d.Destination.
func (s *Service) deliver(ctx context.Context, d *Document) {
	dst := d.Destination
	body, _ := json.Marshal(d)
	wait := time.Second
	for dst.Attempts < s.docOpts.DeliveryTries && ctx.Err() == nil {
		dst.Attempts++
		err := s.post(ctx, dst.URL, d.ID, body)
		if err == nil {
			dst.Status, dst.Error, dst.DeliveredAt = "delivered", "", s.o.Now().UTC().Truncate(time.Microsecond)
			break
		}
		dst.Status, dst.Error = "failed", err.Error()
		if dst.Attempts < s.docOpts.DeliveryTries {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			wait *= 2
		}
	}
	d.UpdatedAt = s.o.Now().UTC().Truncate(time.Microsecond)
}

func (s *Service) post(ctx context.Context, u, id string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "edgewan-aigw")
	req.Header.Set("X-Service-Event-Type", event.DocumentCaptured)
	req.Header.Set("X-Service-Document-Id", id)
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	req.Header.Set("X-Service-Delivery-Id", "dlv_"+hex.EncodeToString(b))
	resp, err := s.docOpts.Client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", redactURL(u), err)
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("POST %s: HTTP %d", redactURL(u), resp.StatusCode)
	}
	return nil
}

// redactURL drops a URL's query (it may hold a token) from error messages.
func redactURL(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i] + "?..."
	}
	return u
}

func (s *Service) initDocuments() {
	s.docOpts = s.o.DocumentOptions
	s.docOpts.defaults()
	s.extractor = document.New(s.docOpts.Extract)
	s.docWake = make(chan struct{}, 1)
	s.extractSlots = make(chan struct{}, s.docOpts.Concurrency)
	s.mDocs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "edgewan_aigw_documents_total", Help: "Documents by outcome: captured, failed (stored with a reason), refused (4xx, not stored), queued.",
	}, []string{"outcome"})
	s.mPages = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "edgewan_aigw_document_pages_total", Help: "Pages of captured documents, by how their text was read.",
	}, []string{"method"})
	s.mExtract = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "edgewan_aigw_document_extract_seconds", Help: "Time to extract a document's text (OCR included).",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
	})
	if s.o.Registerer != nil {
		s.o.Registerer.MustRegister(s.mDocs, s.mPages, s.mExtract)
	}
}

// extract runs the extractor (on a document Inspect checked, when info is not nil) and counts
// its time. At most Concurrency extractions run at once (OCR keeps a core busy); the others
// wait their turn.
func (s *Service) extract(ctx context.Context, data []byte, info *document.Info) (*document.Result, error) {
	select {
	case s.extractSlots <- struct{}{}:
		defer func() { <-s.extractSlots }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	start := time.Now()
	var res *document.Result
	var err error
	if info != nil {
		res, err = s.extractor.ExtractInspected(ctx, data, info)
	} else {
		res, err = s.extractor.Extract(ctx, data)
	}
	s.mExtract.Observe(time.Since(start).Seconds())
	return res, err
}

// Extractor is the document extractor in use (its tools and limits).
func (s *Service) Extractor() *document.Extractor { return s.extractor }
