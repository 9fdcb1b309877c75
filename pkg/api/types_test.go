package api

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Each contract resource decodes from its testdata file and encodes back to
// the same JSON: the field names are exactly the contract's.
func TestRoundTrip(t *testing.T) {
	for file, v := range map[string]any{
		"version.json":         &VersionInfo{},
		"version-batch.json":   &VersionInfo{},
		"batch.json":           &BatchResult{},
		"tree.json":            &Tree{},
		"write-v1.json":        &WriteResult{},
		"write-v2.json":        &WriteResult{},
		"write-v2-fail.json":   &WriteResult{},
		"delete-v1.json":       &DeleteResult{},
		"delete-v2.json":       &DeleteResult{},
		"error.json":           &ErrorBody{},
		"error-cause.json":     &ErrorBody{},
		"write-v2-cause.json":  &WriteResult{},
		"delete-v2-cause.json": &DeleteResult{},
		"logs.json":            &LogListing{},
		"logs-empty.json":      &LogListing{},
		"stats.json":           &StatsListing{},
		"gamelogs.json":        &GameLogListing{},
		"health.json":          &Health{},
		"health-partial.json":  &Health{},
		"gamestats.json":       &GameStatsLine{},
		"snapshot.json":        &GameSnapshotLine{},
	} {
		t.Run(file, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(want))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v); err != nil {
				t.Fatalf("decoding: %v", err)
			}
			got, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var a, b any
			json.Unmarshal(want, &a)
			json.Unmarshal(got, &b)
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if !bytes.Equal(ja, jb) {
				t.Fatalf("round trip changed the JSON:\nwant %s\ngot  %s", ja, jb)
			}
		})
	}
}

func TestToolsPath(t *testing.T) {
	if got := ToolsPath(Version, PathGameLogsFile); got != "/api/v1/gamelogs/file" {
		t.Fatal(got)
	}
	if _, err := ParseVariant("3"); err == nil {
		t.Fatal("variant 3 accepted")
	}
}
