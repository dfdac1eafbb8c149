package rest

import (
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/edgewan/edgewan/coreapi/page"
)

// List serves a list endpoint the one way every family does: parse the list parameters
// (refusing unknown ones), fetch Limit+1 rows with the filters, answer the envelope.
func List[T any](c *gin.Context, cd *page.Codec, filters []string, fetch func(p page.Params, q url.Values) ([]T, error), key func(T) page.Key) {
	q := c.Request.URL.Query()
	// The path, not the route pattern: a cursor of one webhook's deliveries must not page
	// through another's.
	list := c.Request.URL.Path
	p, err := cd.Parse(q, list, filters...)
	if err != nil {
		Fail(c, err)
		return
	}
	rows, err := fetch(p, q)
	if err != nil {
		Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, page.Page(cd, q, list, p, rows, key))
}
