package fastcgi

import (
	"strings"

	"github.com/arkaweb/arka/server/internal/wire"
)

// What a request path maps to under the document root.
type resolution int

const (
	resScript   resolution = iota // run target
	resNotFound                   // 404
	resSlash                      // a directory named without its trailing slash: 301 to path + "/"
	resStatic                     // an existing file that is not a script: Options.Static serves it
)

// resolve maps the normalized URL path p to a script, like nginx's
//
//	fastcgi_split_path_info ^(.+?\.php)(/.*)$;
//	try_files $fastcgi_script_name $uri $uri/ /index.php?$args;
//
// The path is split after the first segment ending in a split_path
// extension (".php"): "/app/index.php/a/b" is the script "/app/index.php"
// with PATH_INFO "/a/b". The script must be an existing regular file under
// the root; anything else is 404 (or the fallback, when configured), so
// "/uploads/photo.jpg/x.php" never runs photo.jpg, and the part before
// ".php" is never searched for a shorter match the way PHP's
// cgi.fix_pathinfo does.
//
// A path without a script segment is a directory (its index script runs),
// an existing file (served by Options.Static), or neither (the fallback
// runs, or 404). Symbolic links inside the root are followed, as nginx does
// by default; the path itself cannot leave the root, because it is clean
// and absolute (checked here again).
//
// A path with a segment starting with a dot ("/.hidden.php",
// "/dir/.x/y.php", "/.git/config") is 404 before anything else, the
// fallback included, as the static handler does and as nginx's common
// "location ~ /\. { deny all; }" does: dotfiles hold configuration and
// version-control data, never pages. "/.well-known/" (RFC 8615) is the
// exception, below it no dot segment is.
//
// encSlash is the offset in p of the first slash the client sent encoded
// (%2F; wire.EncodedSlashAt), or -1. Such a slash is data, never a
// directory separator: a script name or file path containing one names
// nothing (the fallback runs, or 404), while PATH_INFO may hold it,
// decoded as RFC 3875 section 4.1.5 wants ("/index.php/a%2Fb": PATH_INFO
// "/a/b"; REQUEST_URI keeps "%2F" for front controllers that route on it).
func (h *Handler) resolve(p string, encSlash int, t *target) resolution {
	if !cleanPath(p) || wire.HasDotSegment(p) {
		return resNotFound
	}
	if script, info, ok := h.splitScript(p); ok {
		if encSlash >= 0 && encSlash < len(script) {
			return h.fallbackTarget(t)
		}
		switch h.kind(script, "") {
		case kindFile:
			*t = target{scriptName: script, pathInfo: info}
			return resScript
		case kindMissing:
			return h.fallbackTarget(t)
		}
		// A directory or device named like a script: not runnable.
		return resNotFound
	}
	if encSlash >= 0 {
		return h.fallbackTarget(t)
	}
	switch h.kind(p, "") {
	case kindDir:
		if !strings.HasSuffix(p, "/") {
			return resSlash
		}
		for _, idx := range h.index {
			if h.kind(p, idx) != kindFile {
				continue
			}
			if !h.isScript(idx) {
				return resStatic
			}
			*t = target{scriptName: p + idx}
			return resScript
		}
		return h.fallbackTarget(t)
	case kindFile:
		return resStatic
	case kindMissing:
		return h.fallbackTarget(t)
	}
	return resNotFound
}

// fallbackTarget runs the front controller, if there is one.
func (h *Handler) fallbackTarget(t *target) resolution {
	if h.fallback == "" {
		return resNotFound
	}
	if h.kind(h.fallback, "") != kindFile {
		h.logf("fallback script %s%s is not a regular file", h.root, h.fallback)
		return resNotFound
	}
	*t = target{scriptName: h.fallback}
	return resScript
}

// splitScript finds the first path segment that ends in a split extension
// (compared without regard to case, so "/x.PHP" is never mistaken for a
// plain file and served as source).
func (h *Handler) splitScript(p string) (script, info string, ok bool) {
	for start := 1; start < len(p); {
		end := strings.IndexByte(p[start:], '/')
		if end < 0 {
			end = len(p)
		} else {
			end += start
		}
		if h.isScript(p[start:end]) {
			return p[:end], p[end:], true
		}
		start = end + 1
	}
	return "", "", false
}

// isScript reports whether a file name ends in a split extension and has
// more before it.
func (h *Handler) isScript(name string) bool {
	for _, ext := range h.splitExts {
		if len(name) > len(ext) && strings.EqualFold(name[len(name)-len(ext):], ext) {
			return true
		}
	}
	return false
}

// cleanPath reports whether p is absolute and free of NUL, empty, "." and
// ".." segments (a trailing slash is allowed). The server hands over
// normalized paths; this is defence in depth, as the path is joined to the
// root.
func cleanPath(p string) bool {
	if p == "" || p[0] != '/' || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	for i := 1; i < len(p); {
		j := strings.IndexByte(p[i:], '/')
		if j < 0 {
			j = len(p) - i
		}
		seg := p[i : i+j]
		if (seg == "" && i+j < len(p)) || seg == "." || seg == ".." {
			return false
		}
		i += j + 1
	}
	return true
}
