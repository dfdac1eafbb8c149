package telemetry

import (
	"encoding/json"
	"testing"
	"time"
)

// TestStoredHoleCompat: the hole request is an optional field, so mixed versions read each
// other's stored messages: an agent older than it (its Stored had no Hole) decodes a request as
// the plain watermark it carries, and a newer agent decodes an older controller's watermark
// with no request. A watermark without a hole marshals without the field.
func TestStoredHoleCompat(t *testing.T) {
	at := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	req := Stored{V: SchemaVersion, Site: "s1", Device: "d1", Seq: 41, Boot: "b", Time: at, Hole: &SeqRange{From: 42, To: 49}}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	type olderStored struct { // Stored before the hole request
		V      int       `json:"v"`
		Site   string    `json:"site"`
		Device string    `json:"device"`
		Seq    uint64    `json:"seq"`
		Boot   string    `json:"boot"`
		Time   time.Time `json:"ts"`
	}
	var old olderStored
	if err := json.Unmarshal(b, &old); err != nil {
		t.Fatalf("an older agent decoding a request: %v", err)
	}
	if old != (olderStored{V: SchemaVersion, Site: "s1", Device: "d1", Seq: 41, Boot: "b", Time: at}) {
		t.Errorf("an older agent read %+v; want the watermark 41", old)
	}
	plain, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	var got Stored
	if err := json.Unmarshal(plain, &got); err != nil || got.Hole != nil || got.Seq != 41 {
		t.Errorf("a newer agent decoding an older watermark: %+v, %v; want seq 41, no hole", got, err)
	}
	req.Hole = nil
	if b, _ := json.Marshal(req); string(b) != string(plain) {
		t.Errorf("a watermark without a hole marshals as %s; want %s (no hole field)", b, plain)
	}
}
