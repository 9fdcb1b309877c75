// The arena's own tests: run them with `hoster test examples/sites`. Each
// test gets a fresh instance on a virtual clock; game.advance(seconds) runs
// the ticks and send rounds that fall due, without waiting.

test("a new instance scatters the coins and starts round 1", () => {
  game.advance(0);
  assert.equal(game.state.round, 1);
  assert.equal(Object.keys(game.entities).length, 12);
});

test("a joining player is welcomed, greeted and sees itself", () => {
  const ada = game.join({ name: "ada" });
  game.advance(0.1);
  const kinds = ada.messages.map((m) => m.t);
  assert.equal(kinds[0], "welcome");
  assert(ada.messages.some((m) => m.t === "message" && m.type === "hello"), "no greeting");
  assert(ada.sees(ada.id));
  assert.equal(game.players[ada.id].name, "ada");
});

test("moving takes a step at once and keeps going with the stick", () => {
  const ada = game.join({ name: "ada" });
  const x0 = game.players[ada.id].x;
  ada.send("move", { dx: 1, dy: 0 });
  game.advance(0.05); // one tick applies the command
  const x1 = game.players[ada.id].x;
  assert(x1 > x0, `no step: ${x0} -> ${x1}`);
  game.advance(1);
  assert(game.players[ada.id].x > x1, "the stick does not keep the player moving");
});

test("a move out of bounds is refused before it reaches the game", () => {
  const ada = game.join({ name: "ada" });
  ada.send("move", { dx: 5, dy: 0 });
  const errors = ada.messages.filter((m) => m.t === "error");
  assert.deepEqual(errors.map((m) => m.error), ['argument "dx" must be at most 1']);
});

test("chat is heard by everyone, and a second message within a second is refused", () => {
  const ada = game.join({ name: "ada" });
  const bob = game.join({ name: "bob" });
  ada.send("say", { text: "hi" });
  game.advance(0.1); // a message arrives after the update of its send round (10 a second)
  const heard = bob.messages.filter((m) => m.t === "message" && m.type === "chat");
  assert.deepEqual(heard.map((m) => m.data), [{ from: "ada", text: "hi" }]);
  ada.send("say", { text: "again" });
  game.advance(0.05);
  const refused = ada.messages.filter((m) => m.t === "error");
  assert.equal(refused[refused.length - 1].error, "wait a second between messages");
  game.advance(1);
  ada.send("say", { text: "later" });
  game.advance(0.1);
  assert.equal(bob.messages.filter((m) => m.t === "message" && m.type === "chat").length, 2);
});

test("a player who leaves is gone for the others", () => {
  const ada = game.join({ name: "ada" });
  const bob = game.join({ name: "bob" });
  game.advance(0.2);
  assert(ada.sees(bob.id));
  bob.leave();
  game.advance(0.2);
  assert(!ada.sees(bob.id), "ada still sees bob");
  assert.equal(game.players[bob.id], undefined);
});
