package worker

import "sync"

// rooms is the parent's side of the count of new rooms per address
// (Options.TakeRoom, the parent runtime's): a room is taken for each socket
// as it is handed over (a grant), and the worker says whether the socket
// spent it; one not spent goes back. A worker that asks for a room while
// its address has none left but grants still out (sockets of the address
// being placed in this or another game's worker) is answered once one of
// them is given back, or refused once none is left out: never refused for
// a room that is only lent.
type rooms struct {
	o       *Options
	mu      sync.Mutex
	out     map[string]int             // grants not settled, by address
	waiting map[string][]func(ok bool) // answers to rooms asked for while out[addr] > 0
}

// grant takes a room for a socket of addr (its runtime.AddrKey); settle,
// not nil when one was taken, is to be called once with whether it was
// spent.
func (rs *rooms) grant(addr string) (settle func(spent bool)) {
	if rs.o.TakeRoom == nil || rs.o.ReturnRoom == nil {
		return nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !rs.o.TakeRoom(addr) {
		return nil
	}
	if rs.out == nil {
		rs.out, rs.waiting = map[string]int{}, map[string][]func(bool){}
	}
	rs.out[addr]++
	return func(spent bool) { rs.settle(addr, spent) }
}

// settle ends one of addr's grants: a room not spent goes back, to a
// worker waiting for one first; once none is out, the workers still
// waiting are refused.
func (rs *rooms) settle(addr string, spent bool) {
	rs.mu.Lock()
	if rs.out[addr]--; rs.out[addr] <= 0 {
		delete(rs.out, addr)
	}
	if !spent {
		rs.o.ReturnRoom(addr)
	}
	var yes, no []func(bool)
	q := rs.waiting[addr]
	for len(q) > 0 && rs.o.TakeRoom(addr) {
		yes, q = append(yes, q[0]), q[1:]
	}
	if rs.out[addr] == 0 {
		no, q = q, nil
	}
	if len(q) == 0 {
		delete(rs.waiting, addr)
	} else {
		rs.waiting[addr] = q
	}
	rs.mu.Unlock()
	for _, answer := range yes {
		answer(true)
	}
	for _, answer := range no {
		answer(false)
	}
}

// ask answers a worker's request for a new room of addr, at once unless
// all of addr's rooms are lent to sockets still being placed.
func (rs *rooms) ask(addr string, answer func(ok bool)) {
	if rs.o.TakeRoom == nil {
		answer(true)
		return
	}
	rs.mu.Lock()
	ok := rs.o.TakeRoom(addr)
	if !ok && rs.out[addr] > 0 {
		rs.waiting[addr] = append(rs.waiting[addr], answer)
		rs.mu.Unlock()
		return
	}
	rs.mu.Unlock()
	answer(ok)
}
