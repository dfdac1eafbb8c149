// Package openapi serves the OpenAPI 3 document of all three API families at /openapi.json.
package openapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	"gopkg.in/yaml.v3"
)

//go:embed openapi.yaml
var source []byte

// JSON returns the document as JSON.
func JSON() ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(source, &doc); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	return json.Marshal(doc)
}

// Handler serves the document.
func Handler() (gin.HandlerFunc, error) {
	b, err := JSON()
	if err != nil {
		return nil, err
	}
	return func(c *gin.Context) { c.Data(http.StatusOK, "application/json", b) }, nil
}
