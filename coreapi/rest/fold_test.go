package rest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/coreapi/apierr"
	"github.com/edgewan/edgewan/coreapi/rest"
)

// TestDecodeBytesCaseFoldDuplicate: encoding/json matches keys to fields case-insensitively and
// keeps the last, so {"title":"a","TITLE":"b"} is the same field given twice: a proxy or audit
// log reading "title" would see another request than the one served. It must be refused as a
// duplicate; two keys differing in case in a map are distinct and stay accepted.
func TestDecodeBytesCaseFoldDuplicate(t *testing.T) {
	type req struct {
		Title  string            `json:"title"`
		Labels map[string]string `json:"labels"`
		Nested struct {
			Level int `json:"level"`
		} `json:"nested"`
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	for _, body := range []string{
		`{"title":"a","TITLE":"b"}`,
		`{"Title":"a","title":"b"}`,
		`{"nested":{"level":1,"Level":2}}`,
		`{"items":[{"name":"x"},{"name":"y","NAME":"z"}]}`,
	} {
		var got req
		err := rest.DecodeBytes([]byte(body), &got)
		e := wantAPIError(t, err, http.StatusBadRequest, apierr.CodeBadRequest)
		if !strings.Contains(e.Message, "twice") {
			t.Errorf("DecodeBytes(%s): message %q; want it to say a field is given twice", body, e.Message)
		}
	}
	var got req
	if err := rest.DecodeBytes([]byte(`{"labels":{"env":"a","Env":"b"}}`), &got); err != nil {
		t.Fatalf("map keys differing in case: %v; want accepted", err)
	}
	if got.Labels["env"] != "a" || got.Labels["Env"] != "b" {
		t.Fatalf("labels %v; want both keys", got.Labels)
	}
}
