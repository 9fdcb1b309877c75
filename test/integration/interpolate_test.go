package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hoster-dev/hoster/pkg/gen"
)

// glidePage samples game.view(dot).x at every animation frame for two
// seconds and reports the samples and how many updates moved the dot.
const glidePage = `<!doctype html><title>loading</title>
<script src="hoster.client.js"></script>
<script>
  const g = Hoster.connect({});
  let dot = null, updates = 0;
  const samples = [];
  g.on("appear", (t) => { if (t.type === "dot") dot = t.id; });
  g.on("change", (t, f) => { if (t.id === dot && "x" in f) updates++; });
  function frame() {
    if (dot && updates > 2) {
      const v = g.view(dot);
      samples.push({ x: v.x, raw: g.entities[dot].x });
    }
    if (samples.length && performance.now() - start > 2000) {
      fetch("report", { method: "POST", body: JSON.stringify({ samples, updates }) });
      return;
    }
    requestAnimationFrame(frame);
  }
  const start = performance.now() + 1000;
  requestAnimationFrame(frame);
</script>`

// TestInterpolationInChromium: an entity moving steadily, sent 5 times a
// second, drawn from game.view at every animation frame, moves smoothly:
// never backwards, and through many more positions than updates arrived.
func TestInterpolationInChromium(t *testing.T) {
	root := filepath.Join(t.TempDir(), "games")
	dir := filepath.Join(root, "glide.example", "glide")
	for rel, body := range map[string]string{
		"hoster-game.json":                `{"tickRate": 20, "sendRate": 5, "capacity": 4, "origins": ["*"]}`,
		"hoster-entities/dot/fields.json": `{"x": {"type": "number", "interpolate": true}}`,
		"hoster-entities/dot/tick.js":     `export default function (i, e, dt) { e.x += 10 * dt; }`,
		"hoster-instance/create.js":       `export default function (i) { i.spawn("dot", { x: 0 }); }`,
	} {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	if res, err := gen.Generate(root); err != nil || res.Failed() {
		t.Fatalf("%v %v", err, res.Problems())
	}
	type report struct {
		Samples []struct{ X, Raw float64 }
		Updates int
	}
	var rep report
	if b := firstReport(t, root, "glide.example", "glide", glidePage, "its samples"); json.Unmarshal(b, &rep) != nil {
		t.Fatalf("the report %q is not JSON", b)
	}
	if len(rep.Samples) < 20 {
		t.Fatalf("only %d animation frames sampled", len(rep.Samples))
	}
	distinct, raws := map[float64]bool{}, map[float64]bool{}
	for i, s := range rep.Samples {
		distinct[s.X] = true
		raws[s.Raw] = true
		if i > 0 && s.X < rep.Samples[i-1].X {
			t.Fatalf("the dot moved backwards at frame %d: %v then %v", i, rep.Samples[i-1].X, s.X)
		}
	}
	// Raw positions change only with each update; drawn ones at every frame.
	if len(distinct) <= 2*len(raws) {
		t.Fatalf("%d drawn positions for %d raw ones over %d frames: not smoothed", len(distinct), len(raws), len(rep.Samples))
	}
}
