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
	got := generateAndCheck(t, tsc, root, "a.com/tag")
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
	got := generateAndCheck(t, tsc, root, "a.com/tag")
	want := "a.com/tag/hoster-instance/tick.ts:3:3: TS2322: Type 'string' is not assignable to type 'number'."
	if strings.Join(got, "\n") != want {
		t.Fatalf("tsc said\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
}

// TestCheckRunsBeforeWriting: GenerateWith's check sees the game's types on
// disk, and a game it finds problems in keeps its generated files exactly
// as they were. It needs no compiler: the check here is a stand-in.
func TestCheckRunsBeforeWriting(t *testing.T) {
	root := t.TempDir()
	game := filepath.Join(root, "a.com", "tag")
	os.MkdirAll(filepath.Join(game, "hoster-instance"), 0o755)
	os.WriteFile(filepath.Join(game, "hoster-game.json"), []byte(`{"tickRate": 20, "sendRate": 10, "capacity": 2, "origins": ["*"]}`), 0o644)
	tick := filepath.Join(game, "hoster-instance", "tick.ts")
	os.WriteFile(tick, []byte("export default function tick(instance: Instance, dt: number) {}\n"), 0o644)
	if res, err := Generate(root); err != nil || res.Failed() {
		t.Fatalf("generating: %v %v", err, res.Problems())
	}
	before := map[string]string{}
	for _, f := range []string{ServerFile, MapFile, ClientFile, TypesFile} {
		b, _ := os.ReadFile(filepath.Join(game, f))
		before[f] = string(b)
	}

	os.WriteFile(tick, []byte("export default function tick(instance: Instance, dt: number) { instance.log(\"changed\"); }\n"), 0o644)
	wrong := Problem{File: "a.com/tag/hoster-instance/tick.ts", Line: 1, Col: 1, Msg: "TS0000: wrong"}
	res, err := GenerateWith(root, Options{Check: func(r, dir string) ([]Problem, error) {
		if _, err := os.Stat(filepath.Join(r, dir, EnvFile)); err != nil || dir != "a.com/tag" {
			t.Errorf("the check ran on %s before the types were written: %v", dir, err)
		}
		return []Problem{wrong}, nil
	}})
	if err != nil || len(res.Games) != 1 || len(res.Games[0].Problems) != 1 || res.Games[0].Problems[0] != wrong {
		t.Fatalf("result %+v %v", res, err)
	}
	for f, want := range before {
		if b, _ := os.ReadFile(filepath.Join(game, f)); string(b) != want {
			t.Errorf("%s was rewritten though the check failed", f)
		}
	}

	res, err = GenerateWith(root, Options{Check: func(string, string) ([]Problem, error) { return nil, errors.New("tsc crashed") }})
	if err != nil || !res.Failed() || !strings.Contains(res.Games[0].Problems[0].String(), "a.com/tag: type-checking: tsc crashed") {
		t.Fatalf("a checker that cannot run: %+v %v", res, err)
	}
	res, err = GenerateWith(root, Options{Check: func(string, string) ([]Problem, error) { return nil, nil }})
	if err != nil || res.Failed() || len(res.Games[0].Written) == 0 {
		t.Fatalf("a passing check: %+v %v", res, err)
	}
}

// generateAndCheck generates root's games and type-checks game with tsc,
// returning tsc's problems as file:line:column lines.
func generateAndCheck(t *testing.T, tsc []string, root, game string) []string {
	t.Helper()
	if res, err := Generate(root); err != nil || res.Failed() {
		t.Fatalf("generating: %v %v", err, res.Problems())
	}
	problems, err := Check(context.Background(), tsc, root, game)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	return got
}
