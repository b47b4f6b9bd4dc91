package config

import (
	"fmt"
	"strings"
)

// Redirect answers every request of the route with a redirection:
//
//	handler = { type = "redirect", to = "https://example.org{uri}", status = 301 }
type Redirect struct {
	// To is the target: an absolute URL ("https://example.org/new{path}")
	// or a path ("/new{path}{?query}"), with placeholders (Placeholders).
	To string `toml:"to"`
	// Status is 301, 302, 303, 307 or 308 (RFC 9110 section 15.4). Default
	// DefaultRedirectStatus.
	Status int `toml:"status"`
	// StripPrefix removes the route path from {path} and {uri}: with route
	// "/old/", /old/a/b gives {path} "/a/b".
	StripPrefix bool `toml:"strip_prefix"`

	// Parts is To split into literal text and placeholders, by validation.
	Parts []TemplatePart `toml:"-"`
}

// Respond answers every request of the route with a fixed status and an
// optional short body:
//
//	handler = { type = "respond", status = 404 }
//	handler = { type = "respond", status = 200, body = "ok\n" }
type Respond struct {
	// Status is 200..599 (not a redirection: see Redirect). Default 200.
	Status int `toml:"status"`
	// Body is sent as is (at most MaxRespondBody bytes). Without a body, an
	// error status gets the site's error page (or the built-in one) and
	// any other status an empty body.
	Body string `toml:"body"`
	// ContentType of Body. Default "text/plain; charset=utf-8".
	ContentType string `toml:"content_type"`
}

// Redirect and respond defaults and limits.
const (
	// DefaultRedirectStatus is 302 Found, as Caddy's redir: a mistaken
	// permanent redirect stays in browsers' caches. Say 301 or 308 for a
	// permanent move.
	DefaultRedirectStatus = 302
	DefaultRespondStatus  = 200
	DefaultRespondType    = "text/plain; charset=utf-8"
	// MaxRespondBody bounds a respond handler's body: it is for short
	// answers (health checks, denials), not pages.
	MaxRespondBody = 64 << 10
)

// Placeholder is a value taken from the request in a redirect target.
type Placeholder uint8

// The placeholders of a redirect target. Values are escaped where they are
// put: a path or query cannot add a line break, a space or a fragment to
// the Location field, nor make a relative target scheme-relative ("//host").
const (
	Literal     Placeholder = iota
	PhPath                  // {path}: the normalized request path, percent-encoded
	PhQuery                 // {query}: the query string without "?", as sent
	PhQueryMark             // {?query}: "?" and the query, or nothing when there is none
	PhURI                   // {uri}: {path}{?query}
	PhHost                  // {host}: the requested host name, without port
	PhScheme                // {scheme}: "http" or "https", as the client reached Arka
)

// Placeholders names the placeholders a redirect target may use.
var Placeholders = map[string]Placeholder{
	"{path}": PhPath, "{query}": PhQuery, "{?query}": PhQueryMark, "{uri}": PhURI,
	"{host}": PhHost, "{scheme}": PhScheme,
}

// TemplatePart is literal text or a placeholder.
type TemplatePart struct {
	Kind Placeholder
	Text string // for Literal
}

// ParseTemplate splits a redirect target into parts.
func ParseTemplate(to string) ([]TemplatePart, error) {
	var parts []TemplatePart
	for to != "" {
		i := strings.IndexAny(to, "{}")
		if i < 0 {
			parts = append(parts, TemplatePart{Text: to})
			break
		}
		if i > 0 {
			parts = append(parts, TemplatePart{Text: to[:i]})
			to = to[i:]
		}
		j := strings.IndexByte(to, '}')
		if to[0] == '}' || j < 0 {
			return nil, fmt.Errorf("unbalanced { } (placeholders are %s)", placeholderList())
		}
		k, ok := Placeholders[to[:j+1]]
		if !ok {
			return nil, fmt.Errorf("unknown placeholder %s (use %s)", to[:j+1], placeholderList())
		}
		parts = append(parts, TemplatePart{Kind: k})
		to = to[j+1:]
	}
	return parts, nil
}

func placeholderList() string {
	return "{path}, {query}, {?query}, {uri}, {host}, {scheme}"
}

func (v *validator) redirect(at string, r *Redirect) {
	switch r.Status {
	case 301, 302, 303, 307, 308:
	default:
		v.errAt(at+".status", "redirect status %d: use 301, 302, 303, 307 or 308", r.Status)
	}
	to := r.To
	switch {
	case to == "":
		v.errAt(at, "redirect needs a target: to = \"https://example.org{uri}\"")
		return
	case strings.ContainsAny(to, " \t\r\n\x00\x7f#") || !validHeaderValue(to):
		v.errAt(at+".to", "redirect target %q must not contain spaces, control characters or #", to)
		return
	case strings.HasPrefix(to, "//"):
		v.errAt(at+".to", "redirect target %q is scheme-relative; write the scheme (https://...) or a path", to)
		return
	case strings.HasPrefix(to, "/") || strings.HasPrefix(to, "{") && !strings.HasPrefix(to, "{scheme}"):
	default:
		scheme, rest, ok := strings.Cut(to, "://")
		if !ok || (scheme != "http" && scheme != "https" && scheme != "{scheme}") || rest == "" || rest[0] == '/' {
			v.errAt(at+".to", "redirect target %q must be a path (\"/new{path}\") or an http:// or https:// URL with a host", to)
			return
		}
	}
	parts, err := ParseTemplate(to)
	if err != nil {
		v.errAt(at+".to", "redirect target %q: %v", to, err)
		return
	}
	if parts[0].Kind != Literal && parts[0].Kind != PhPath && parts[0].Kind != PhURI && parts[0].Kind != PhScheme {
		v.errAt(at+".to", "redirect target %q must start with a path, a URL, {path}, {uri} or {scheme}", to)
		return
	}
	r.Parts = parts
}

func (v *validator) respond(at string, r *Respond) {
	switch {
	case r.Status < 200 || r.Status > 599:
		v.errAt(at+".status", "respond status %d: use 200 to 599", r.Status)
	case r.Status >= 300 && r.Status < 400 && r.Status != 304:
		v.errAt(at+".status", "respond status %d is a redirection: use handler = { type = \"redirect\", to = ..., status = %d }", r.Status, r.Status)
	}
	if r.Body != "" && (r.Status == 204 || r.Status == 304) {
		v.errAt(at+".body", "a %d response has no body (RFC 9110 section 15.3.5, 15.4.5)", r.Status)
	}
	if len(r.Body) > MaxRespondBody {
		v.errAt(at+".body", "body is %d bytes; respond is for short answers (at most %d); serve a page with a static route", len(r.Body), MaxRespondBody)
	}
	if !validHeaderValue(r.ContentType) || !strings.Contains(r.ContentType, "/") {
		v.errAt(at+".content_type", "content_type %q is not a media type like \"text/plain; charset=utf-8\"", r.ContentType)
	}
}
