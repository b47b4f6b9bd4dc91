package config

// Handler is the configuration of a route's handler: one of *Static,
// *Proxy, *FastCGI, *Status, *Redirect, *Respond (the types a site file
// names with handler = { type = "..." }) or *Builtin. The set is closed:
// only this package's types implement it, so a type switch over them is
// exhaustive, and the server builds each route's handler with one.
//
// A Handler from Load is complete and valid: defaults are applied,
// addresses and networks parsed, paths absolute. Handlers built from it
// check nothing that Load already checked.
type Handler interface {
	// Type is the handler's name as a site file writes it ("static",
	// "proxy", ...): for messages, logs and the status page.
	Type() string
	handler()
}

// HandlerTypes are the route handler types a site file may name.
var HandlerTypes = []string{"static", "proxy", "fastcgi", "status", "redirect", "respond"}

// newHandler returns an empty handler of a type a site file names, or nil
// when no handler has that name.
func newHandler(typ string) Handler {
	switch typ {
	case "static":
		return &Static{}
	case "proxy":
		return &Proxy{}
	case "fastcgi":
		return &FastCGI{}
	case "status":
		return &Status{}
	case "redirect":
		return &Redirect{}
	case "respond":
		return &Respond{}
	}
	return nil
}

// Builtin is a handler the server provides for its own sites (such as the
// page of problems of the fallback site, server.FallbackSite); a site
// file cannot name one.
type Builtin struct {
	Name string // a name no site file's type can have, such as "arka-problems"
}

func (*Static) Type() string   { return "static" }
func (*Proxy) Type() string    { return "proxy" }
func (*FastCGI) Type() string  { return "fastcgi" }
func (*Status) Type() string   { return "status" }
func (*Redirect) Type() string { return "redirect" }
func (*Respond) Type() string  { return "respond" }
func (b *Builtin) Type() string {
	return b.Name
}

func (*Static) handler()   {}
func (*Proxy) handler()    {}
func (*FastCGI) handler()  {}
func (*Status) handler()   {}
func (*Redirect) handler() {}
func (*Respond) handler()  {}
func (*Builtin) handler()  {}
