package server

import "strings"

// cleanPath normalizes a decoded request path for routing and file lookup:
// "." and ".." segments are resolved (RFC 3986 section 5.2.4) and repeated
// slashes merged, keeping a trailing slash. It reports false for paths that
// must be refused with 400: not starting with "/", containing NUL or a
// backslash, or with ".." climbing above "/". The common case (nothing to
// clean) returns p itself without allocating.
func cleanPath(p string) (string, bool) {
	if p == "" || p[0] != '/' {
		return "", false
	}
	dirty := false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case 0, '\\':
			return "", false
		case '/':
			if i+1 < len(p) && (p[i+1] == '/' || p[i+1] == '.') {
				dirty = true
			}
		}
	}
	if !dirty {
		return p, true
	}
	segs := make([]string, 0, 8)
	trailing := false
	for _, s := range strings.Split(p[1:], "/") {
		switch s {
		case "":
			trailing = true
			continue
		case ".":
			trailing = true
			continue
		case "..":
			if len(segs) == 0 {
				return "", false
			}
			segs = segs[:len(segs)-1]
			trailing = true
			continue
		}
		segs = append(segs, s)
		trailing = false
	}
	out := "/" + strings.Join(segs, "/")
	if trailing && len(segs) > 0 {
		out += "/"
	}
	return out, true
}
