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
}

var pages = func() map[int]page {
	m := map[int]page{}
	for _, code := range []int{301, 308, 400, 403, 404, 405, 408, 411, 412, 413, 414, 416, 417, 421, 429, 431, 500, 501, 502, 503, 504, 505} {
		text := strconv.Itoa(code) + " " + wire.StatusText(code)
		body := []byte("<!DOCTYPE html>\n<html><head><title>" + text + "</title></head>\n<body><h1>" + text + "</h1><hr><p>arka</p></body></html>\n")
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

// Write sends status code with its HTML error page. Header fields already
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
	h["Content-Type"] = htmlType
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
