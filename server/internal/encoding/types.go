package encoding

import "strings"

// Compressible reports whether a media type is worth compressing: text,
// JavaScript, JSON, XML, SVG, WebAssembly and uncompressed fonts; never
// images, audio, video, archives or WOFF fonts, which are compressed already.
// Parameters (";charset=...") are ignored; matching is case-insensitive.
func Compressible(contentType string) bool {
	mt := contentType
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	mt = trimOWS(mt)
	if len(mt) > 5 && eqFold(mt[:5], "text/") {
		return true
	}
	for _, t := range compressibleTypes {
		if len(mt) == len(t) && eqFold(mt, t) {
			return true
		}
	}
	// Structured syntax suffixes (RFC 6839): application/ld+json, atom+xml...
	if n := len(mt); n > 5 && (eqFold(mt[n-5:], "+json") || eqFold(mt[n-4:], "+xml")) {
		return true
	}
	return false
}

var compressibleTypes = []string{
	"application/javascript",
	"application/x-javascript",
	"application/ecmascript",
	"application/json",
	"application/xml",
	"application/wasm",
	"application/x-font-ttf",
	"application/vnd.ms-fontobject",
	"application/x-httpd-php",
	"application/graphql-response+json",
	"application/manifest+json",
	"application/x-ndjson",
	"image/svg+xml",
	"image/x-icon",
	"image/vnd.microsoft.icon",
	"image/bmp",
	"font/ttf",
	"font/otf",
	"font/collection",
}
