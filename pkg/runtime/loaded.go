package runtime

// Loaded reports whether domain/name is a game that loaded and serves: its
// page and files are served only then.
func (rt *Runtime) Loaded(domain, name string) bool { return rt.lookup(domain, name) != nil }
