// Package coreapi serves the shared core family (/v1): ping, organisation, devices, SOC cases
// and webhooks. The conventions every family shares live in its subpackages.
package coreapi

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/auth"
	"github.com/edgewan/edgewan/coreapi/org"
	"github.com/edgewan/edgewan/coreapi/page"
	"github.com/edgewan/edgewan/coreapi/rest"
	"github.com/edgewan/edgewan/coreapi/soc"
	"github.com/edgewan/edgewan/coreapi/webhook"
)

// Deps are what the /v1 handlers call.
type Deps struct {
	Pages    *page.Codec
	Org      org.Store
	Cases    *soc.Service
	Webhooks *webhook.Service
	Version  string
	Now      func() time.Time // the server time ping reports (the controller's clock); nil: time.Now
}

// Register mounts the /v1 routes on g, which must already authenticate.
func Register(g *gin.RouterGroup, d Deps) {
	if d.Now == nil {
		d.Now = time.Now
	}
	h := &handlers{d}
	g.GET("/ping", h.ping)
	g.GET("/org", auth.Require(auth.ScopeOrgRead), h.org)
	g.GET("/devices", auth.Require(auth.ScopeDevicesRead), h.devices)

	g.GET("/soc/cases", auth.Require(auth.ScopeSOCRead), h.listCases)
	g.GET("/soc/cases/:id", auth.Require(auth.ScopeSOCRead), h.getCase)
	g.POST("/soc/cases", auth.Require(auth.ScopeSOCWrite), h.createCase)
	g.PATCH("/soc/cases/:id", auth.Require(auth.ScopeSOCWrite), h.updateCase)

	wh := g.Group("/webhooks", auth.Require(auth.ScopeWebhooksWrite))
	wh.POST("", h.createWebhook)
	wh.GET("", h.listWebhooks)
	wh.GET("/:id", h.getWebhook)
	wh.DELETE("/:id", h.deleteWebhook)
	wh.GET("/:id/deliveries", h.listDeliveries)
	wh.GET("/:id/deliveries/:delivery", h.getDelivery)
	wh.POST("/:id/deliveries/:delivery/redeliver", h.redeliver)
}

type handlers struct{ Deps }

func (h *handlers) ping(c *gin.Context) {
	k := auth.KeyFrom(c)
	c.JSON(http.StatusOK, gin.H{
		"pong": true, "time": h.Now().UTC(), "version": h.Version,
		"key":        gin.H{"id": k.ID, "name": k.Name, "scopes": k.Scopes, "project": k.Project},
		"request_id": rest.GetRequestID(c),
	})
}

func (h *handlers) org(c *gin.Context) {
	o, err := h.Org.Org(c.Request.Context())
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, o)
}

func (h *handlers) devices(c *gin.Context) {
	rest.List(c, h.Pages, []string{"status", "site"}, func(p page.Params, q url.Values) ([]*org.Device, error) {
		if st := q.Get("status"); st != "" && !slices.Contains(org.DeviceStatuses, st) {
			return nil, apierr.BadRequest("status must be one of %s; got %q", strings.Join(org.DeviceStatuses, ", "), st)
		}
		return h.Org.ListDevices(c.Request.Context(), p, org.DeviceFilter{Status: q.Get("status"), SiteID: q.Get("site")})
	}, func(d *org.Device) page.Key { return page.Key{UpdatedAt: d.UpdatedAt, ID: d.ID} })
}

func caseKey(cs *soc.Case) page.Key { return page.Key{UpdatedAt: cs.UpdatedAt, ID: cs.ID} }

func (h *handlers) listCases(c *gin.Context) {
	rest.List(c, h.Pages, []string{"status", "severity", "source"}, func(p page.Params, q url.Values) ([]*soc.Case, error) {
		return h.Cases.List(c.Request.Context(), p, soc.Filter{Status: q.Get("status"), Severity: q.Get("severity"), Source: q.Get("source")})
	}, caseKey)
}

func (h *handlers) getCase(c *gin.Context) {
	cs, err := h.Cases.Get(c.Request.Context(), c.Param("id"))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, cs)
}

func (h *handlers) createCase(c *gin.Context) {
	var req soc.CreateRequest
	if err := rest.Decode(c, &req, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	cs, err := h.Cases.Create(c.Request.Context(), req)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.Header("Location", c.Request.URL.Path+"/"+cs.ID)
	c.JSON(http.StatusCreated, cs)
}

func (h *handlers) updateCase(c *gin.Context) {
	var req soc.UpdateRequest
	if err := rest.DecodePatch(c, &req, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	cs, err := h.Cases.Update(c.Request.Context(), c.Param("id"), req, auth.KeyFrom(c).ID)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, cs)
}

func (h *handlers) createWebhook(c *gin.Context) {
	var req webhook.CreateRequest
	if err := rest.Decode(c, &req, 0); err != nil {
		rest.Fail(c, err)
		return
	}
	w, err := h.Webhooks.Create(c.Request.Context(), req, auth.KeyFrom(c).ID)
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.Header("Location", c.Request.URL.Path+"/"+w.ID)
	c.JSON(http.StatusCreated, w)
}

func (h *handlers) listWebhooks(c *gin.Context) {
	rest.List(c, h.Pages, []string{"event"}, func(p page.Params, q url.Values) ([]*webhook.Webhook, error) {
		return h.Webhooks.List(c.Request.Context(), p, q.Get("event"))
	}, func(w *webhook.Webhook) page.Key { return page.Key{UpdatedAt: w.UpdatedAt, ID: w.ID} })
}

func (h *handlers) getWebhook(c *gin.Context) {
	w, err := h.Webhooks.Get(c.Request.Context(), c.Param("id"))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, w)
}

func (h *handlers) deleteWebhook(c *gin.Context) {
	if err := h.Webhooks.Delete(c.Request.Context(), c.Param("id")); err != nil {
		rest.Fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (h *handlers) listDeliveries(c *gin.Context) {
	rest.List(c, h.Pages, []string{"status", "event_id"}, func(p page.Params, q url.Values) ([]*webhook.Delivery, error) {
		return h.Webhooks.Deliveries(c.Request.Context(), c.Param("id"), p, q.Get("status"), q.Get("event_id"))
	}, func(d *webhook.Delivery) page.Key { return page.Key{UpdatedAt: d.UpdatedAt, ID: d.ID} })
}

func (h *handlers) getDelivery(c *gin.Context) {
	d, err := h.Webhooks.Delivery(c.Request.Context(), c.Param("id"), c.Param("delivery"))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, d)
}

func (h *handlers) redeliver(c *gin.Context) {
	d, err := h.Webhooks.Redeliver(c.Request.Context(), c.Param("id"), c.Param("delivery"))
	if err != nil {
		rest.Fail(c, err)
		return
	}
	c.JSON(http.StatusAccepted, d)
}
