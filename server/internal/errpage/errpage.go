// Package errpage writes the small, fixed error responses every Arka
// handler shares: an HTML body naming the status, with its length known, and
// never any internal detail.
package errpage

import (
	"net/http"
	"strconv"

	"github.com/arkaweb/arka/server/internal/wire"
)

type page struct {
	body []byte
	cl   []string
	ct   []string // nil: htmlType
}

var pages = func() map[int]page {
	m := map[int]page{}
	for code := 300; code < 600; code++ {
		if wire.StatusText(code) == "" {
			continue
		}
		text := strconv.Itoa(code) + " " + wire.StatusText(code)
		body := []byte("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">" +
			"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>" + text + "</title></head>\n" +
			"<body style=\"font-family:system-ui,sans-serif;margin:2em auto;max-width:40em;padding:0 1em\"><h1>" + text + "</h1><hr><p>arka</p></body></html>\n")
		m[code] = page{body: body, cl: []string{strconv.Itoa(len(body))}}
	}
	return m
}()

var htmlType = []string{"text/html; charset=utf-8"}

// ContentType is the Content-Type of the error pages.
const ContentType = "text/html; charset=utf-8"

// Page returns the body of status code's error page, for writers that do
// not go through an http.ResponseWriter (the HTTP/1.1 engine's answers to
// requests it cannot parse). The slice is shared: do not modify it.
func Page(code int) []byte { return pageOf(code).body }

func pageOf(code int) page {
	p, ok := pages[code]
	if !ok {
		text := strconv.Itoa(code) + " " + wire.StatusText(code)
		p = page{body: []byte(text + "\n")}
		p.cl = []string{strconv.Itoa(len(p.body))}
	}
	return p
}

// Write sends status code with its HTML error page: the site's own (see
// Pages) when the writer chain carries one for code, else the built-in. Header fields already
// set by the caller (Allow, Retry-After, Content-Range...) are kept, except
// representation fields of a file that is not being sent. Errors (4xx and
// 5xx) go out with Cache-Control: no-store in place of any caching field
// set before (RFC 9111 section 5.2.2.5): a shared cache must not keep an
// error made for one request, such as a 412 or 416.
func Write(w http.ResponseWriter, r *http.Request, code int) {
	h := w.Header()
	delete(h, "Etag")
	delete(h, "Last-Modified")
	delete(h, "Content-Encoding")
	delete(h, "Accept-Ranges")
	if code >= 400 {
		for k := range h {
			if wire.CachingField(k) {
				delete(h, k)
			}
		}
		h["Cache-Control"] = noStore
	}
	p := pageOf(code)
	if c := customFor(w, code); c != nil {
		p = *c
	}
	h["Content-Type"] = htmlType
	if p.ct != nil {
		h["Content-Type"] = p.ct
	}
	h["Content-Length"] = p.cl
	h["X-Content-Type-Options"] = nosniff
	w.WriteHeader(code)
	if r == nil || r.Method != http.MethodHead {
		w.Write(p.body)
	}
}

var (
	nosniff = []string{"nosniff"}
	noStore = []string{"no-store"}
)
