package gen

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tscOrSkip finds the TypeScript compiler as gen --check does, or skips:
// make test installs one (scripts/test-deps.sh) when npm is there.
func tscOrSkip(t *testing.T) []string {
	t.Helper()
	tsc, err := FindTSC(context.Background(), t.TempDir())
	if errors.Is(err, ErrNoTSC) {
		t.Skip("no TypeScript compiler here (make test installs one with npm): ", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return tsc
}

// TestExampleTypeChecks runs tsc over the example game with the types gen
// writes: it must pass as shipped.
func TestExampleTypeChecks(t *testing.T) {
	tsc := tscOrSkip(t)
	root := copyTree(t, filepath.Join("..", "..", "examples", "sites"))
	if res, err := Generate(root); err != nil || res.Failed() {
		t.Fatalf("generating: %v %v", err, res.Problems())
	}
	problems, err := Check(context.Background(), tsc, root, "example.com/arena")
	if err != nil || len(problems) > 0 {
		t.Fatalf("tsc over the example: %v %v", err, problems)
	}
}

// TestCheckFindsTypeErrors shows the hooks' types doing their job: a wrong
// field type, an unknown command argument and a wrongly typed state are
// reported at their file:line:column.
func TestCheckFindsTypeErrors(t *testing.T) {
	tsc := tscOrSkip(t)
	root := t.TempDir()
	game := filepath.Join(root, "a.com", "tag")
	write := func(rel, data string) {
		t.Helper()
		p := filepath.Join(game, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("hoster-game.json", `{"tickRate": 20, "sendRate": 10, "capacity": 2, "origins": ["*"]}`)
	write("hoster-player/fields.json", `{"score": "integer", "name": "string"}`)
	write("hoster-commands/tag/args.json", `{"target": "string"}`)
	write("hoster-instance/create.ts", "interface Round { it: string | null; round: number }\n"+
		"export default function create(instance: Instance, params: Params): Round {\n"+
		"  return { it: null, round: 1 };\n}\n")
	write("hoster-player/join.ts", "export default function join(instance: Instance, player: Player, params: Params) {\n"+
		"  player.name = params.name ?? \"anon\";\n"+
		"  player.score = \"zero\";\n"+
		"}\n")
	write("hoster-commands/tag/run.ts", "export default function run(instance: Instance, player: Player, args: Args<\"tag\">) {\n"+
		"  instance.state.it = args.target;\n"+
		"  instance.state.round = args.whom;\n"+
		"  instance.state.round = \"two\";\n"+
		"}\n")
	res, err := Generate(root)
	if err != nil || res.Failed() {
		t.Fatalf("generating: %v %v", err, res.Problems())
	}
	problems, err := Check(context.Background(), tsc, root, "a.com/tag")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := []string{
		"a.com/tag/hoster-commands/tag/run.ts:3:31: TS2339: Property 'whom' does not exist on type '{ target: string; }'.",
		"a.com/tag/hoster-commands/tag/run.ts:4:3: TS2322: Type 'string' is not assignable to type 'number'.",
		"a.com/tag/hoster-player/join.ts:3:3: TS2322: Type 'string' is not assignable to type 'number'.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("tsc said\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestStateIsWhatCreateReturns: instance.state has create's declared return
// type; a create that may return undefined (and then sets the state itself)
// does not make the state possibly undefined.
func TestStateIsWhatCreateReturns(t *testing.T) {
	tsc := tscOrSkip(t)
	root := t.TempDir()
	game := filepath.Join(root, "a.com", "tag")
	for rel, data := range map[string]string{
		"hoster-game.json": `{"tickRate": 20, "sendRate": 10, "capacity": 2, "origins": ["*"]}`,
		"hoster-instance/create.ts": "interface Round { round: number }\n" +
			"export default function create(instance: Instance, params: Params): Round | undefined {\n" +
			"  if (params.fresh) return { round: 1 };\n  instance.state = { round: 0 };\n}\n",
		"hoster-instance/tick.ts": "export default function tick(instance: Instance) {\n" +
			"  instance.state.round += 1;\n  instance.state.round = \"two\";\n}\n",
	} {
		p := filepath.Join(game, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := Generate(root); err != nil || res.Failed() {
		t.Fatalf("generating: %v %v", err, res.Problems())
	}
	problems, err := Check(context.Background(), tsc, root, "a.com/tag")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := "a.com/tag/hoster-instance/tick.ts:3:3: TS2322: Type 'string' is not assignable to type 'number'."
	if strings.Join(got, "\n") != want {
		t.Fatalf("tsc said\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
}
