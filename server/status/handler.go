package status

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/arkaweb/arka/server/errpage"
)

// Options configure the status handler.
type Options struct {
	// Allow lists the client networks that may see the page (see ParseAllow);
	// empty means DefaultAllow (loopback and private ranges). Others get 403.
	Allow []netip.Prefix
	// Source provides the snapshot; required.
	Source Source
	// History, if set, is drawn as sparklines and included in JSON.
	History *History
	// Refresh is the HTML page's reload interval; 0 means SampleInterval.
	Refresh time.Duration
}

// Handler serves the status route. It is an http.Handler.
type Handler struct {
	allow   []netip.Prefix
	src     Source
	hist    *History
	refresh int // seconds
}

// New builds the handler. It fails if Source is nil.
func New(o Options) (*Handler, error) {
	if o.Source == nil {
		return nil, errors.New("status: Options.Source is nil")
	}
	allow := o.Allow
	if len(allow) == 0 {
		allow = DefaultAllow()
	}
	refresh := int(o.Refresh / time.Second)
	if refresh <= 0 {
		refresh = int(SampleInterval / time.Second)
	}
	return &Handler{allow: allow, src: o.Source, hist: o.History, refresh: refresh}, nil
}

// ServeHTTP answers GET and HEAD (RFC 9110 section 9.3.1-9.3.2) with HTML, JSON
// or Prometheus text, chosen by ?format= (html, json, prometheus) or, without
// it, by Accept: application/json. Clients outside the allow list get 403,
// other methods 405 with Allow.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	if !allowed(h.allow, r.RemoteAddr) {
		// The same small HTML page as every handler's own errors.
		hdr.Set("Cache-Control", "no-store")
		errpage.Write(w, r, http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "html"
		if acceptsJSON(r.Header.Get("Accept")) {
			format = "json"
		}
	}
	snap := h.src.Snapshot()
	if snap.Time.IsZero() {
		snap.Time = time.Now()
	}
	if h.hist != nil {
		snap.History = h.hist.View()
	}

	var body bytes.Buffer
	switch format {
	case "json":
		hdr.Set("Content-Type", "application/json")
		enc := json.NewEncoder(&body)
		enc.SetIndent("", " ")
		if err := enc.Encode(&snap); err != nil {
			http.Error(w, "500 status: "+err.Error(), http.StatusInternalServerError)
			return
		}
	case "prometheus":
		hdr.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		if err := writePrometheus(&body, &snap); err != nil {
			http.Error(w, "500 status: "+err.Error(), http.StatusInternalServerError)
			return
		}
	case "html":
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		if err := renderHTML(&body, &snap, h.refresh); err != nil {
			http.Error(w, "500 status: "+err.Error(), http.StatusInternalServerError)
			return
		}
	default:
		http.Error(w, "400 unknown format; use html, json or prometheus", http.StatusBadRequest)
		return
	}
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("Vary", "Accept")
	hdr.Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body.Bytes())
}

// acceptsJSON reports whether Accept names application/json (or a +json type)
// with a non-zero quality.
func acceptsJSON(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
		if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
			continue
		}
		for _, p := range strings.Split(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "q") {
				if q, err := strconv.ParseFloat(v, 64); err == nil && q <= 0 {
					mt = ""
				}
			}
		}
		if mt == "" {
			continue
		}
		return true
	}
	return false
}
