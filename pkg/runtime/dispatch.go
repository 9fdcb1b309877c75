package runtime

import (
	"encoding/json"
	"errors"
	"slices"

	"github.com/dop251/goja"
)

// hook is one of the game's functions, with the registry object it is
// called on (as the prelude called it, registry.player.join(...)).
type hook struct {
	fn   goja.Callable
	this goja.Value
}

// hooks are the game's functions Go calls during a tick, found once when
// the version's code is loaded into a runtime.
type hooks struct {
	create, serialise, join, disconnect, reconnect, tick hook
	commands                                             map[string]hook
	entityTicks                                          map[string]hook
	// The prelude's helpers a tick needs: make (the instance object), leave
	// (a leave, also kick's), caught (what a hook threw), takeOut (what
	// hooks asked).
	make, leave, caught, takeOut goja.Callable
}

// findHooks reads the game's functions from the registry reg.
func (v *vm) findHooks(reg *goja.Object) error {
	h := &v.hooks
	get := func(owner goja.Value, name string) hook {
		o, ok := owner.(*goja.Object)
		if !ok {
			return hook{}
		}
		fn, _ := goja.AssertFunction(o.Get(name))
		return hook{fn: fn, this: o}
	}
	player, inst := reg.Get("player"), reg.Get("instance")
	h.join, h.disconnect, h.reconnect = get(player, "join"), get(player, "disconnect"), get(player, "reconnect")
	h.tick, h.create, h.serialise = get(inst, "tick"), get(inst, "create"), get(inst, "serialise")
	h.commands, h.entityTicks = map[string]hook{}, map[string]hook{}
	if cmds, ok := reg.Get("commands").(*goja.Object); ok {
		for _, name := range cmds.Keys() {
			h.commands[name] = get(cmds.Get(name), "run")
		}
	}
	if ents, ok := reg.Get("entities").(*goja.Object); ok {
		for _, t := range ents.Keys() {
			if th := get(ents.Get(t), "tick"); th.fn != nil {
				h.entityTicks[t] = th
			}
		}
	}
	for name, fn := range map[string]*goja.Callable{"__make": &h.make, "__leave": &h.leave, "__caught": &h.caught, "__takeOut": &h.takeOut} {
		f, ok := goja.AssertFunction(v.rt.Get(name))
		if !ok {
			return errors.New("the runtime prelude is broken: " + name + " is not a function")
		}
		*fn = f
	}
	return v.findEnter()
}

// findEnter gets __js.enter, for nested.
func (v *vm) findEnter() error {
	js, _ := v.rt.Get("__js").(*goja.Object)
	if js == nil {
		return errors.New("the intrinsics are gone")
	}
	f, ok := goja.AssertFunction(js.Get("enter"))
	if !ok {
		return errors.New("the intrinsics are broken: enter is not a function")
	}
	v.enter = f
	v.body = v.rt.ToValue(func(goja.FunctionCall) goja.Value {
		v.nestedErr = v.work()
		return goja.Undefined()
	})
	return nil
}

// nested runs work inside one call into JavaScript (__js.enter), so that
// the hooks it calls are calls from inside JavaScript: goja drops its value
// stack after every call from outside, and a hook called from outside
// grows a new one, allocation after allocation. What work returns is
// returned; a failure of the call itself (work panicked with a thrown
// value, or an interrupt) when work returned nil.
func (v *vm) nested(work func() error) error {
	v.work, v.nestedErr = work, nil
	_, err := v.enter(goja.Undefined(), v.body)
	werr := v.nestedErr
	v.work, v.nestedErr = nil, nil
	if werr != nil {
		return werr
	}
	return err
}

// create makes the instance object (id, now) and runs the create hook with
// the first player's params: what it returns, unless undefined, becomes
// instance.state (a create that returns nothing keeps what it set there).
func (v *vm) create(id string, now int64, params map[string]string) error {
	v.now = now
	_, err := guarded(v.rt, v.budget, v.stuck, "create", func() (struct{}, error) {
		v.rt.Set("__now", now)
		if _, err := v.hooks.make(goja.Undefined(), v.rt.ToValue(id)); err != nil {
			return struct{}{}, err
		}
		inst, ok := v.rt.Get("__inst").(*goja.Object)
		if !ok {
			return struct{}{}, errors.New("the instance object is gone")
		}
		v.inst = inst
		if v.hooks.create.fn == nil {
			return struct{}{}, nil
		}
		p := make(map[string]any, len(params))
		for k, x := range params {
			p[k] = x
		}
		state, err := v.hooks.create.fn(v.hooks.create.this, inst, ownObject(v.rt, p))
		if err == nil && state != nil && !goja.IsUndefined(state) {
			inst.Set("state", state)
		}
		return struct{}{}, err
	})
	return err
}

// snapshot is what a snapshot line records: serialise's value, or the
// state, as JSON.
func (v *vm) snapshot() (json.RawMessage, error) {
	return guarded(v.rt, v.budget, v.stuck, "serialise", func() (json.RawMessage, error) {
		x := v.inst.Get("state")
		if h := v.hooks.serialise; h.fn != nil {
			var err error
			if x, err = h.fn(h.this, v.inst); err != nil {
				return nil, err
			}
		}
		js, _ := v.rt.Get("__js").(*goja.Object)
		if js == nil {
			return nil, errors.New("the intrinsics are gone")
		}
		stringify, _ := goja.AssertFunction(js.Get("stringify"))
		s, err := stringify(goja.Undefined(), x)
		if err != nil {
			return nil, err
		}
		if s == nil || goja.IsUndefined(s) {
			return json.RawMessage("null"), nil
		}
		return asJSON(s)
	})
}

// sizes counts the players and the entities.
func (v *vm) sizes() (players, entities int, err error) {
	n, err := guarded(v.rt, v.budget, v.stuck, "counting", func() ([2]int, error) {
		var n [2]int
		for i, name := range []string{"players", "entities"} {
			o, ok := v.inst.Get(name).(*goja.Object)
			if !ok {
				return n, errors.New("instance." + name + " is not an object")
			}
			n[i] = len(o.Keys())
		}
		return n, nil
	})
	return n[0], n[1], err
}

// tickAt applies the queued events in order, then (when dt > 0) runs the
// timers that are due, the instance's tick and each entity's, all at now
// (ms since the epoch), and returns what the hooks asked of Go (see
// apply). A hook that throws is recorded and the rest goes on: a command's
// error goes to its player. Only a hook that runs out of budget ends the
// tick, with an error.
func (v *vm) tickAt(dt float64, now int64, events []event) (string, error) {
	v.now = now
	return guarded(v.rt, v.budget, v.stuck, "tick", func() (string, error) {
		if err := v.nested(func() error { return v.dispatch(dt, now, events) }); err != nil {
			return "", err
		}
		res, err := v.hooks.takeOut(goja.Undefined())
		if err != nil {
			return "", err
		}
		return asString(res)
	})
}

func (v *vm) dispatch(dt float64, now int64, events []event) error {
	r, h := v.rt, &v.hooks
	r.Set("__now", now)
	inst, ok := r.Get("__inst").(*goja.Object)
	if !ok {
		return errors.New("the instance object is gone")
	}
	v.inst = inst
	players, ok := inst.Get("players").(*goja.Object)
	if !ok {
		return errors.New("instance.players is not an object")
	}
	pm := thingMapOf(players) // nil when the game replaced instance.players
	for _, ev := range events {
		var err error
		switch ev.kind {
		case "join":
			err = v.join(players, ev)
		case "leave":
			_, err = h.leave(goja.Undefined(), r.ToValue(ev.player)) // nothing left to do when a kick did it
		case "drop", "resume":
			err = v.connect(players, ev)
		case "cmd":
			var x goja.Value
			if pm != nil {
				x = pm.Get(ev.player)
			} else {
				x = players.Get(ev.player)
			}
			p, ok := x.(*goja.Object)
			if !ok {
				continue
			}
			cmd := h.commands[ev.name]
			err = v.callHook(cmd, "cmd", ev.player, ev.name, inst, p, ownObject(r, ev.args))
		}
		if err != nil {
			return err
		}
	}
	if dt > 0 {
		return v.ticks(inst, dt)
	}
	return nil
}

// join adds a player (a thing with its id and connected) and runs the join
// hook; a player whose join failed or was refused is not in the game.
func (v *vm) join(players *goja.Object, ev event) error {
	t, p := v.newThing(v.eng.typeOf(playerType))
	t.Set("id", v.rt.ToValue(ev.player))
	t.Set("connected", v.rt.ToValue(true))
	players.Set(ev.player, p)
	v.eng.join(ev.player) // it gets everything it sees first
	if v.hooks.join.fn == nil {
		return nil
	}
	params := make(map[string]any, len(ev.params))
	for k, x := range ev.params {
		params[k] = x
	}
	failed, err := v.try(v.hooks.join, v.inst, p, ownObject(v.rt, params))
	if err != nil || failed == nil {
		return err
	}
	players.Delete(ev.player)
	v.eng.leave(ev.player)
	return v.caught("join", failed, ev.player, "")
}

// connect marks a player disconnected (drop) or connected again (resume:
// its viewer starts over), and runs its hook when that changed.
func (v *vm) connect(players *goja.Object, ev event) error {
	resume := ev.kind == "resume"
	if resume {
		v.eng.resume(ev.player)
	}
	p, ok := players.Get(ev.player).(*goja.Object)
	if !ok {
		return nil
	}
	was := p.Get("connected")
	if resume != (was != nil && was.StrictEquals(v.rt.ToValue(false))) {
		return nil
	}
	p.Set("connected", resume)
	h, what := v.hooks.disconnect, "disconnect"
	if resume {
		h, what = v.hooks.reconnect, "reconnect"
	}
	return v.callHook(h, what, ev.player, "", v.inst, p)
}

// ticks runs the due timers, the instance's tick and each entity's.
func (v *vm) ticks(inst *goja.Object, dt float64) error {
	h := &v.hooks
	if err := v.runTimers(); err != nil {
		return err
	}
	dtV := v.rt.ToValue(dt)
	if err := v.callHook(h.tick, "tick", "", "", inst, dtV); err != nil {
		return err
	}
	if len(h.entityTicks) == 0 {
		return nil
	}
	ents, ok := inst.Get("entities").(*goja.Object)
	if !ok {
		return errors.New("instance.entities is not an object")
	}
	var ids []string
	var snap []mapEntry // m's entries while no tick has set or deleted one (gen)
	var gen uint64
	m := thingMapOf(ents)
	if m != nil { // the usual instance.entities: its ids and things without goja
		ids, snap, gen = slices.Clone(m.ids), m.entries(), m.gen
	} else {
		ids = ents.Keys()
	}
	args := []goja.Value{inst, nil, dtV} // goja copies them: one slice for every entity
	var last string                      // the type of the entity before, and its hook
	var lastHook hook
	var hasLast bool
	for i, id := range ids {
		var x goja.Value
		var t *thing
		switch {
		case m != nil && m.gen == gen:
			x, t = snap[i].obj, snap[i].t
		case m != nil:
			x, t = m.at(id)
		default:
			x = ents.Get(id)
		}
		en, ok := x.(*goja.Object)
		if !ok {
			continue // removed by an earlier entity's tick
		}
		var typ goja.Value
		switch {
		case t != nil && t.kind != nil:
			typ = t.kind
		case t != nil:
			typ = t.Get("type")
		default:
			typ = en.Get("type")
		}
		if typ == nil || !goja.IsString(typ) {
			continue
		}
		if name := typ.String(); !hasLast || name != last {
			last = name
			lastHook, hasLast = h.entityTicks[name]
			if !hasLast {
				continue
			}
		}
		args[1] = en
		if err := v.callHook(lastHook, "entity", "", last, args...); err != nil {
			return err
		}
	}
	return nil
}

// callHook runs hook h (nothing when the game has none) and records what it
// threw (see caught) as what ("entity" for an entity's tick, its type in
// command); only running out of budget is an error.
func (v *vm) callHook(h hook, what, player, command string, args ...goja.Value) error {
	if h.fn == nil {
		return nil
	}
	failed, err := v.try(h, args...)
	if err != nil || failed == nil {
		return err
	}
	return v.caught(what, failed, player, command)
}

// try calls h: failed is what it threw, err an interrupt (or another
// failure of goja's), which ends the tick.
func (v *vm) try(h hook, args ...goja.Value) (failed goja.Value, err error) {
	if _, err = h.fn(h.this, args...); err == nil {
		return nil, nil
	}
	var ex *goja.Exception // on the heap (errors.As): only when something was thrown
	if errors.As(err, &ex) {
		return ex.Value(), nil
	}
	return nil, err
}

// caught hands what a hook threw to the prelude's __caught, which reports
// it and answers the player as its kind of hook says.
func (v *vm) caught(what string, thrown goja.Value, player, command string) error {
	if thrown == nil {
		thrown = goja.Undefined()
	}
	ticking := what == "tick" || what == "entity" || what == "timer"
	if what == "entity" { // its type in command: named here, not at every call
		what, command = "entity "+command+" tick", ""
	}
	_, err := v.hooks.caught(goja.Undefined(), v.rt.ToValue(what), thrown, v.rt.ToValue(player), v.rt.ToValue(command), v.rt.ToValue(ticking))
	return err
}

// ownObject is m as a JavaScript object of own properties, as JSON.parse
// would make it: a key such as "__proto__" from a player's query is a
// plain property, not its prototype. The values were checked against
// args.json (or are a query's strings): scalars only.
func ownObject(r *goja.Runtime, m map[string]any) *goja.Object {
	o := r.NewObject()
	var buf [8]string // the usual few names, sorted without a slice of their own
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		o.DefineDataProperty(k, r.ToValue(m[k]), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
	}
	return o
}
