// Package noc serves the controller's read-only NOC page: HTML, CSS and JavaScript embedded in
// the binary, no external resources. The page itself is public; every figure it shows comes from
// the authenticated API (/sd-wan/v1) with the API key the operator pastes in.
package noc

import (
	"embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

//go:embed static
var static embed.FS

// CSP is the page's Content-Security-Policy: its own script, style and API only; no inline
// script or style, no frames, no forms posted anywhere.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Paths are the routes Register serves (all GET); they are not part of the API.
var Paths = []string{"/noc", "/noc/noc.js", "/noc/noc.css", "/noc/vendor/uPlot.iife.min.js", "/noc/vendor/uPlot.min.css"}

var files = map[string]struct{ name, contentType string }{
	"/noc":         {"static/index.html", "text/html; charset=utf-8"},
	"/noc/noc.js":  {"static/noc.js", "text/javascript; charset=utf-8"},
	"/noc/noc.css": {"static/noc.css", "text/css; charset=utf-8"},
	// uPlot 1.6.32 (MIT, static/vendor/uPlot.LICENSE), from `npm pack uplot`: dist/uPlot.iife.min.js
	// and dist/uPlot.min.css as published. Served from the binary, never fetched at run time.
	"/noc/vendor/uPlot.iife.min.js": {"static/vendor/uPlot.iife.min.js", "text/javascript; charset=utf-8"},
	"/noc/vendor/uPlot.min.css":     {"static/vendor/uPlot.min.css", "text/css; charset=utf-8"},
}

// Register mounts the page's routes on r.
func Register(r gin.IRoutes) {
	for _, p := range Paths {
		f := files[p]
		body, err := static.ReadFile(f.name)
		if err != nil {
			panic("noc: missing embedded file " + f.name) // caught by every test that starts a server
		}
		r.GET(p, func(c *gin.Context) {
			h := c.Writer.Header()
			h.Set("Content-Security-Policy", CSP)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("X-Frame-Options", "DENY")
			h.Set("Referrer-Policy", "no-referrer")
			h.Set("Cache-Control", "no-cache")
			c.Data(http.StatusOK, f.contentType, body)
		})
	}
}
