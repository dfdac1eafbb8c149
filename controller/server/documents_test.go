package server_test

// Document capture over HTTPS on a real controller: real PDFs and scans generated here, real
// tesseract and poppler (scripts/ocr.sh install), both databases.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgewan/edgewan/aigw/document/documenttest"
	"github.com/edgewan/edgewan/aigw/gateway"
	"github.com/edgewan/edgewan/controller/server/servertest"
	"github.com/edgewan/edgewan/coreapi/auth"
)

// docForm is a POST /documents body: fields (in order) and the file, last unless noFile.
type docForm struct {
	fields   [][2]string
	filename string
	file     []byte
	noFile   bool
}

func (f docForm) encode(t testing.TB) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, kv := range f.fields {
		if err := w.WriteField(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if !f.noFile {
		name := f.filename
		if name == "" {
			name = "upload.bin"
		}
		fw, err := w.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(f.file)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), buf.Bytes()
}

// docUpload sends a multipart upload and returns the response.
func docUpload(t testing.TB, s *servertest.Server, token string, f docForm) *servertest.Response {
	t.Helper()
	ct, body := f.encode(t)
	return docRaw(t, s, token, ct, body)
}

func docRaw(t testing.TB, s *servertest.Server, token, contentType string, body []byte) *servertest.Response {
	t.Helper()
	req, err := http.NewRequest("POST", s.URL+"/ai-gateway/v1/documents", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return &servertest.Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// docWait polls a document until it leaves processing.
func docWait(t testing.TB, s *servertest.Server, token, id string) gateway.Document {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := s.Do("GET", "/ai-gateway/v1/documents/"+id, token, nil)
		if r.Status != 200 {
			t.Fatalf("GET document: %d %s", r.Status, r.Body)
		}
		var d gateway.Document
		r.JSON(t, &d)
		if d.Status != gateway.DocProcessing {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("document %s still processing after 60s", id)
		}
		time.Sleep(50 * time.Millisecond) // polling the worker, bounded by the deadline
	}
}

func docFields(d gateway.Document) map[string]gateway.DocumentField {
	m := map[string]gateway.DocumentField{}
	for _, f := range d.Fields {
		if _, ok := m[f.Name]; !ok {
			m[f.Name] = f
		}
	}
	return m
}

// checkInvoice checks the fields of documenttest.Invoice: the business values come back
// exactly, the personal data redacted (placeholders), and no personal value anywhere.
func checkInvoice(t *testing.T, d gateway.Document, raw []byte) {
	t.Helper()
	if d.Status != gateway.DocCaptured || d.Type != "invoice" || d.PageCount != 1 || len(d.Pages) != 1 {
		t.Fatalf("document: status %s type %s pages %d/%d reason %q", d.Status, d.Type, d.PageCount, len(d.Pages), d.Reason)
	}
	fs := docFields(d)
	for name, want := range map[string]string{"invoice_number": "INV-2024-0042", "total": "1,234.56", "subtotal": "1,000.00", "currency": "USD", "date": "2024-03-15", "due_date": "2024-04-14"} {
		if fs[name].Value != want {
			t.Errorf("field %s: got %q; want %q", name, fs[name].Value, want)
		}
	}
	if fs["total"].Normalized != "1234.56" || fs["date"].Normalized != "2024-03-15" {
		t.Errorf("normalized total %q date %q", fs["total"].Normalized, fs["date"].Normalized)
	}
	for name, want := range map[string]string{"email": "[EMAIL_1]", "person": "[PERSON_1]", "phone": "[PHONE_1]"} {
		f := fs[name]
		if f.Value != want || f.Action != "redact" || f.Normalized != "" || f.Page != 1 || f.Confidence <= 0.5 {
			t.Errorf("field %s: %+v; want value %s, action redact", name, f, want)
		}
	}
	for _, secret := range []string{"jane.doe@example.com", "Jane Doe", "415 555 0100", "555 0100"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the answer holds %q: %s", secret, raw)
		}
	}
	if !strings.Contains(d.Pages[0].Text, "INV-2024-0042") || !strings.Contains(d.Pages[0].Text, "[EMAIL_1]") {
		t.Errorf("page text: %q", d.Pages[0].Text)
	}
	if d.Policy == nil || d.Policy.ID != "default" {
		t.Errorf("policy %+v", d.Policy)
	}
}

func TestDocuments(t *testing.T) {
	for _, pg := range []bool{false, true} {
		name := map[bool]string{false: "sqlite", true: "postgres"}[pg]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testDocuments(t, pg)
		})
	}
}

func testDocuments(t *testing.T, pg bool) {
	var mu sync.Mutex
	var crm [][]byte
	var hooks [][]byte
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.URL.Path == "/crm" {
			crm = append(crm, b)
		} else {
			hooks = append(hooks, b)
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	s := servertest.Start(t, servertest.Options{Postgres: pg})
	const project = "docs"
	tok, other := s.ProjectKey(project), s.ProjectKey("docs-other")
	all := s.Key("webhooks:write")
	if r := s.Do("POST", "/v1/webhooks", all, map[string]any{"url": recv.URL + "/hook", "events": []string{"document.captured"}}); r.Status != 201 {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	}

	// A text PDF: captured at once (201), with a CRM destination and the result in the event.
	pdf := documenttest.TextPDF(t, documenttest.Invoice)
	r := docUpload(t, s, tok, docForm{fields: [][2]string{{"project", project}, {"destination_url", recv.URL + "/crm"}, {"webhook", "true"}}, filename: "invoice.pdf", file: pdf})
	if r.Status != 201 {
		t.Fatalf("upload text PDF: %d %s", r.Status, r.Body)
	}
	var d gateway.Document
	r.JSON(t, &d)
	if loc := r.Header.Get("Location"); loc != "/ai-gateway/v1/documents/"+d.ID {
		t.Errorf("Location %q", loc)
	}
	checkInvoice(t, d, r.Body)
	if d.Filename != "invoice.pdf" || d.ContentType != "application/pdf" || d.Kind != "pdf" || d.Size != int64(len(pdf)) || d.Pages[0].Method != "pdftotext" {
		t.Errorf("document metadata: %s", r.Body)
	}
	textID := d.ID

	// A scanned PDF, asynchronously: 202 processing, then captured by the worker with OCR.
	scan := documenttest.ScannedPDF(t, false, documenttest.Invoice)
	r = docUpload(t, s, tok, docForm{fields: [][2]string{{"async", "true"}}, filename: "scan.pdf", file: scan})
	if r.Status != 202 {
		t.Fatalf("upload scanned PDF: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &d)
	if d.Status != gateway.DocProcessing || len(d.Fields) != 0 {
		t.Fatalf("202 body: %s", r.Body)
	}
	got := docWait(t, s, tok, d.ID)
	raw, _ := json.Marshal(got)
	checkInvoice(t, got, raw)
	if got.Pages[0].Method != "ocr" || got.Pages[0].Confidence < 0.7 {
		t.Errorf("scanned page: %+v", got.Pages[0])
	}

	// An image, synchronously.
	r = docUpload(t, s, tok, docForm{file: documenttest.PNG(t, documenttest.Invoice), filename: "photo.png"})
	if r.Status != 201 {
		t.Fatalf("upload PNG: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &d)
	checkInvoice(t, d, r.Body)

	// Refusals: the error body, the documented statuses, nothing stored.
	big := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("0"), 20<<20)...)
	for _, tc := range []struct {
		name   string
		form   docForm
		ct     string
		status int
		code   string
		msg    string
	}{
		{"corrupt PDF", docForm{file: documenttest.Corrupt(t)}, "", 422, "unprocessable", "corrupt"},
		{"encrypted PDF", docForm{file: documenttest.EncryptedPDF(t, "Invoice INV-1")}, "", 422, "unprocessable", "password"},
		{"empty file", docForm{file: nil}, "", 422, "unprocessable", "no bytes"},
		{"blank PDF", docForm{file: documenttest.BlankPDF(t, 1)}, "", 422, "unprocessable", "no text"},
		{"oversize file", docForm{file: big}, "", 413, "payload_too_large", "20971520"},
		{"too many pixels", docForm{file: documenttest.HugePNG(t, 8000, 6000)}, "", 413, "payload_too_large", "8000x6000"},
		{"unsupported type", docForm{file: []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00")}, "", 415, "unsupported_media_type", "not a PDF"},
		{"JSON body", docForm{}, "application/json", 415, "unsupported_media_type", "multipart/form-data"},
		{"no file", docForm{noFile: true, fields: [][2]string{{"project", project}}}, "", 400, "bad_request", "file is required"},
		{"unknown field", docForm{fields: [][2]string{{"colour", "red"}}, file: pdf}, "", 400, "bad_request", "colour"},
		{"repeated field", docForm{fields: [][2]string{{"project", project}, {"project", project}}, file: pdf}, "", 400, "bad_request", "twice"},
		{"bad async", docForm{fields: [][2]string{{"async", "maybe"}}, file: pdf}, "", 400, "bad_request", "async"},
		{"http destination", docForm{fields: [][2]string{{"destination_url", "http://crm.example.com/x"}}, file: pdf}, "", 400, "bad_request", "https"},
		{"another project", docForm{fields: [][2]string{{"project", "docs-other"}}, file: pdf}, "", 403, "forbidden", "docs-other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct, body := tc.form.encode(t)
			if tc.ct != "" {
				ct, body = tc.ct, []byte(`{"project":"docs"}`)
			}
			r := docRaw(t, s, tok, ct, body)
			if r.Status != tc.status {
				t.Fatalf("got %d %s; want %d", r.Status, r.Body, tc.status)
			}
			e := r.Err(t)
			if e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.msg) {
				t.Errorf("error %+v; want %s mentioning %q", e.Error, tc.code, tc.msg)
			}
		})
	}

	// Lists: the project's three documents, paginated and filtered; another project's are 404.
	var page struct {
		Data       []gateway.Document `json:"data"`
		NextCursor *string            `json:"next_cursor"`
	}
	r = s.Do("GET", "/ai-gateway/v1/documents?limit=2&order=asc", tok, nil)
	r.JSON(t, &page)
	if r.Status != 200 || len(page.Data) != 2 || page.NextCursor == nil || page.Data[0].ID != textID {
		t.Fatalf("first page: %d %s", r.Status, r.Body)
	}
	r = s.Do("GET", "/ai-gateway/v1/documents?limit=2&order=asc&cursor="+*page.NextCursor, tok, nil)
	r.JSON(t, &page)
	if len(page.Data) != 1 || page.NextCursor != nil {
		t.Fatalf("second page: %s", r.Body)
	}
	for q, n := range map[string]int{"status=captured": 3, "status=failed": 0, "type=invoice": 3, "type=receipt": 0} {
		r = s.Do("GET", "/ai-gateway/v1/documents?"+q, tok, nil)
		r.JSON(t, &page)
		if r.Status != 200 || len(page.Data) != n {
			t.Errorf("?%s: %d documents; want %d (%s)", q, len(page.Data), n, r.Body)
		}
	}
	for _, q := range []string{"status=lost", "type=novel", "colour=red"} {
		if r := s.Do("GET", "/ai-gateway/v1/documents?"+q, tok, nil); r.Status != 400 {
			t.Errorf("?%s: %d; want 400", q, r.Status)
		}
	}
	if r := s.Do("GET", "/ai-gateway/v1/documents/"+textID, other, nil); r.Status != 404 {
		t.Errorf("another project's document: %d; want 404", r.Status)
	}
	if r := s.Do("GET", "/ai-gateway/v1/documents", other, nil); !strings.Contains(string(r.Body), `"data":[]`) {
		t.Errorf("another project's list: %s", r.Body)
	}

	// The CRM received the first document, and the webhook three document.captured events,
	// the first with its (redacted) result.
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		nc, nh := len(crm), len(hooks)
		mu.Unlock()
		if nc >= 1 && nh >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d CRM deliveries and %d webhook events; want 1 and 3", nc, nh)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	var delivered gateway.Document
	if err := json.Unmarshal(crm[0], &delivered); err != nil || delivered.ID != textID {
		t.Fatalf("CRM body: %v %s", err, crm[0])
	}
	checkInvoice(t, delivered, crm[0])
	withResult := 0
	for _, h := range hooks {
		var ev struct {
			Type string
			Data map[string]any
		}
		if err := json.Unmarshal(h, &ev); err != nil || ev.Type != "document.captured" {
			t.Fatalf("event: %s", h)
		}
		if ev.Data["result"] != nil {
			withResult++
			if ev.Data["document_id"] != textID {
				t.Errorf("the event with a result is for %v", ev.Data["document_id"])
			}
		}
		for _, secret := range []string{"jane.doe@example.com", "Jane Doe"} {
			if bytes.Contains(h, []byte(secret)) {
				t.Errorf("an event holds %q: %s", secret, h)
			}
		}
	}
	if withResult != 1 {
		t.Errorf("%d events carried a result; want 1 (webhook=true)", withResult)
	}
	r = s.Do("GET", "/ai-gateway/v1/documents/"+textID, tok, nil)
	r.JSON(t, &d)
	if d.Destination == nil || d.Destination.Status != "delivered" || d.Destination.Attempts != 1 {
		t.Errorf("destination after delivery: %+v", d.Destination)
	}
}

// TestDocumentsPolicy checks that fields follow the project's policy: hashed e-mails, allowed
// phones, and a masked card number.
func TestDocumentsPolicy(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	const project = "docs-policy"
	_, admin, err := auth.Create(context.Background(), s.Store, "admin", []string{auth.ScopeAIGWAdmin}, project)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Do("POST", "/ai-gateway/v1/policies", admin, map[string]any{"name": "p", "content": map[string]any{
		"entities": map[string]string{"email": "hash", "phone": "allow", "person": "mask"}}})
	var pol gateway.Policy
	r.JSON(t, &pol)
	if r := s.Do("POST", "/ai-gateway/v1/policies/"+pol.ID+"/publish", admin, map[string]any{"version": 1}); r.Status != 200 {
		t.Fatalf("publish: %d %s", r.Status, r.Body)
	}
	r = docUpload(t, s, admin, docForm{file: []byte(documenttest.Invoice)})
	if r.Status != 201 {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	var d gateway.Document
	r.JSON(t, &d)
	fs := docFields(d)
	if f := fs["email"]; f.Action != "hash" || !strings.HasPrefix(f.Value, "[EMAIL:") {
		t.Errorf("email %+v; want hashed", f)
	}
	if f := fs["phone"]; f.Action != "allow" || f.Value != "+1 415 555 0100" {
		t.Errorf("phone %+v; want allowed as is", f)
	}
	if f := fs["person"]; f.Action != "mask" || strings.Contains(f.Value, "Jane") {
		t.Errorf("person %+v; want masked", f)
	}
	if d.Policy == nil || d.Policy.ID != pol.ID || d.Policy.Version != 1 || d.Kind != "text" {
		t.Errorf("policy %+v kind %s", d.Policy, d.Kind)
	}
}
