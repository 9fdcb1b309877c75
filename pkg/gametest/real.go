package gametest

import "github.com/hoster-dev/hoster/pkg/runtime"

// Real is the Factory of hoster test: the game in the real runtime, on a
// virtual clock (runtime.TestGame).
func Real(dir string) (Game, error) {
	g, err := runtime.NewTestGame(dir)
	if err != nil {
		return nil, err
	}
	return realGame{g}, nil
}

// realGame, realPlayer adapt runtime's TestGame and TestPlayer to Game and
// Player (their results are runtime's types).
type realGame struct{ *runtime.TestGame }

type realPlayer struct{ *runtime.TestPlayer }

func (g realGame) Join(params map[string]string) (Player, error) {
	p, err := g.TestGame.Join(params)
	if err != nil {
		return nil, err
	}
	return realPlayer{p}, nil
}

func (g realGame) Instances() []Instance {
	var out []Instance
	for _, in := range g.TestGame.Instances() {
		out = append(out, in)
	}
	return out
}

func (p realPlayer) Instance() Instance {
	if in := p.TestPlayer.Instance(); in != nil {
		return in
	}
	return nil // not a nil *runtime.TestInstance in an Instance
}
