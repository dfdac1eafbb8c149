package gateway

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/page"
	"github.com/edgewan/edgewan/coreapi/rest"
)

// registerDocuments mounts document capture and Automatic mode (called by Register).
func registerDocuments(g *gin.RouterGroup, h *handlers) {
	g.POST("/documents", h.admit(h.s.extractor.MaxBytes()+multipartOverhead), h.uploadDocument)
	g.GET("/documents", h.listDocuments)
	g.GET("/documents/:id", h.getDocument)
	g.GET("/projects/:id/proposals", h.listProposals)
	g.POST("/projects/:id/proposals", adminOnly, h.analyze)
	g.GET("/proposals/:id", h.getProposal)
	g.POST("/proposals/:id/accept", adminOnly, h.acceptProposal)
	g.POST("/proposals/:id/dismiss", adminOnly, h.dismissProposal)
}

// multipartOverhead is what a multipart body may hold besides the file: boundaries, headers,
// and the small fields.
const multipartOverhead = 64 << 10

// maxFormField bounds the form fields other than file.
const maxFormField = 4096

// readUpload reads POST /documents' multipart/form-data body: file (required), project
// (required), destination_url, webhook, async. Unknown and repeated fields are refused, as
// unknown JSON fields are.
func (h *handlers) readUpload(c *gin.Context) (Upload, error) {
	var up Upload
	ct := c.GetHeader("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return up, apierr.New(http.StatusUnsupportedMediaType, apierr.CodeUnsupportedMedia, "Content-Type must be multipart/form-data with a boundary, got %q", ct)
	}
	limit := h.s.extractor.MaxBytes()
	body := http.MaxBytesReader(c.Writer, c.Request.Body, limit+multipartOverhead)
	mr := multipart.NewReader(body, params["boundary"])
	seen := map[string]bool{}
	tooLarge := func() error {
		return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeTooLarge, "the file is larger than %d bytes", limit)
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return up, tooLarge()
		}
		if err != nil {
			return up, apierr.BadRequest("malformed multipart body: %v", err)
		}
		name := part.FormName()
		if seen[name] {
			return up, apierr.BadRequest("form field %q is given twice", name)
		}
		seen[name] = true
		switch name {
		case "file":
			data, err := io.ReadAll(io.LimitReader(part, limit+1))
			if errors.As(err, &mbe) {
				return up, tooLarge()
			}
			if err != nil {
				return up, apierr.BadRequest("reading the file: %v", err)
			}
			if int64(len(data)) > limit {
				return up, tooLarge()
			}
			up.Data, up.Filename = data, part.FileName()
			if !utf8.ValidString(up.Filename) {
				return up, apierr.BadRequest("the file name is not valid UTF-8")
			}
		case "project", "destination_url", "webhook", "async":
			raw, err := io.ReadAll(io.LimitReader(part, maxFormField+1))
			if errors.As(err, &mbe) {
				return up, tooLarge()
			}
			if err != nil {
				return up, apierr.BadRequest("reading form field %s: %v", name, err)
			}
			if len(raw) > maxFormField || !utf8.Valid(raw) {
				return up, apierr.BadRequest("form field %s must be valid UTF-8 of at most %d bytes", name, maxFormField)
			}
			v := string(raw)
			switch name {
			case "project":
				up.Project = v
			case "destination_url":
				up.DestinationURL = v
			default:
				b, err := strconv.ParseBool(v)
				if err != nil {
					return up, apierr.BadRequest("form field %s must be true or false, got %q", name, v)
				}
				if name == "webhook" {
					up.Webhook = b
				} else {
					up.Async = b
				}
			}
		default:
			return up, apierr.BadRequest("unknown form field %q; the fields are file, project, destination_url, webhook and async", name)
		}
	}
	if !seen["file"] {
		return up, apierr.BadRequest("the form field file is required")
	}
	if up.Project == "" {
		up.Project = caller(c).Project
	}
	return up, nil
}

func (h *handlers) uploadDocument(c *gin.Context) {
	if err := h.s.documentsOn(); err != nil {
		rest.Fail(c, err)
		return
	}
	up, err := h.readUpload(c)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	d, done, err := h.s.CaptureDocument(c.Request.Context(), caller(c), rest.GetRequestID(c), up)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.Header("Location", "/ai-gateway/v1/documents/"+d.ID)
	if !done {
		c.JSON(http.StatusAccepted, d)
		return
	}
	c.JSON(http.StatusCreated, d)
}

func (h *handlers) listDocuments(c *gin.Context) {
	rest.List(c, h.pages, []string{"status", "type"}, func(p page.Params, q url.Values) ([]*Document, error) {
		return h.s.ListDocuments(c.Request.Context(), caller(c), p, DocumentFilter{Status: q.Get("status"), Type: q.Get("type")})
	}, func(d *Document) page.Key { return page.Key{UpdatedAt: d.UpdatedAt, ID: d.ID} })
}

func (h *handlers) getDocument(c *gin.Context) {
	d, err := h.s.GetDocument(c.Request.Context(), caller(c), c.Param("id"))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, d)
}

func (h *handlers) listProposals(c *gin.Context) {
	rest.List(c, h.pages, []string{"status", "kind"}, func(p page.Params, q url.Values) ([]*Proposal, error) {
		return h.s.ListProposals(c.Request.Context(), caller(c), c.Param("id"), p, q.Get("status"), q.Get("kind"))
	}, func(p *Proposal) page.Key { return page.Key{UpdatedAt: p.UpdatedAt, ID: p.ID} })
}

func (h *handlers) analyze(c *gin.Context) {
	res, err := h.s.Analyze(c.Request.Context(), caller(c), c.Param("id"))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}

func (h *handlers) getProposal(c *gin.Context) {
	p, err := h.s.GetProposal(c.Request.Context(), caller(c), c.Param("id"))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, p)
}

func (h *handlers) acceptProposal(c *gin.Context) {
	var req ResolveRequest
	if err := rest.Decode(c, &req, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	p, err := h.s.AcceptProposal(c.Request.Context(), caller(c), c.Param("id"), req)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, p)
}

func (h *handlers) dismissProposal(c *gin.Context) {
	var req ResolveRequest
	if err := rest.Decode(c, &req, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	p, err := h.s.DismissProposal(c.Request.Context(), caller(c), c.Param("id"), req)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, p)
}
