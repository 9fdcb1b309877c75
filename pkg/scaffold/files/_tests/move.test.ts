// This game's tests: `hoster test` runs them against the real
// hoster.server.js on a virtual clock. Each test gets a fresh instance as
// game; game.advance(seconds) runs the ticks and send rounds that fall due.

test("the move command moves the player, and the others see it", () => {
  const ada = game.join({ name: "ada" });
  const bob = game.join({ name: "bob" });
  const x0 = game.players[ada.id].x;
  ada.send("move", { dx: 1, dy: 0 });
  game.advance(0.5);
  const x1 = game.players[ada.id].x;
  assert(x1 > x0, `ada did not move right: ${x0} -> ${x1}`);
  assert(bob.sees(ada.id));
  const moved = bob.messages.some((m) => m.t === "update" &&
    (m.change || []).some((c{{ts ": any"}}) => c.id === ada.id && c.f.x > x0));
  assert(moved, "bob was never sent ada's new x");
});

test("letting go stops the player", () => {
  const ada = game.join({ name: "ada" });
  ada.send("move", { dx: 0, dy: -1 });
  game.advance(0.2);
  ada.send("move", { dx: 0, dy: 0 });
  game.advance(0.1);
  const y = game.players[ada.id].y;
  game.advance(1);
  assert.equal(game.players[ada.id].y, y);
});

test("a move beyond the stick's range is refused before it reaches the game", () => {
  const ada = game.join({ name: "ada" });
  ada.send("move", { dx: 2, dy: 0 });
  const errors = ada.messages.filter((m) => m.t === "error").map((m) => m.error);
  assert.deepEqual(errors, ['argument "dx" must be at most 1']);
});
