package main

import (
	"bytes"
	"os"
	"testing"
)

// TestModelUpToDate fails when aigw/detect/namemodel.bin is not what the data generates.
func TestModelUpToDate(t *testing.T) {
	want, err := Build("../../gazetteer")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../namemodel.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("namemodel.bin is stale: run `go run ./internal/genmodel` in aigw/detect")
	}
}
