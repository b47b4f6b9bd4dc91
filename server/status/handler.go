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

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/errpage"
	"github.com/arkaweb/arka/server/internal/realip"
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
	// Trusted are the site's trusted_proxies: from them, the client they
	// forwarded for is the one checked against Allow (realip.Client), so a
	// proxy in front of Arka on the same machine does not open the page
	// to everyone. Without them only the connection's peer counts.
	Trusted []netip.Prefix
	// ClientIPHeader is the site's client_ip_header: the field that names
	// the client in a request from a Trusted proxy.
	ClientIPHeader config.ClientIPHeader
}

// Handler serves the status route. It is an http.Handler.
type Handler struct {
	allow   []netip.Prefix
	trusted []netip.Prefix
	field   config.ClientIPHeader
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
	return &Handler{allow: allow, trusted: o.Trusted, field: o.ClientIPHeader, src: o.Source, hist: o.History, refresh: refresh}, nil
}

// Methods are the methods the page answers, the value of the Allow field
// (RFC 9110 section 10.2.1) of its 405.
const Methods = "GET, HEAD"

// ServeHTTP answers GET and HEAD (RFC 9110 section 9.3.1-9.3.2) with HTML, JSON
// or Prometheus text, chosen by ?format= (html, json, prometheus) or, without
// it, by Accept: application/json. Clients outside the allow list get 403,
// other methods 405 with Allow.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	client := r.RemoteAddr
	if len(h.trusted) > 0 {
		client = realip.Client(r.RemoteAddr, r.Header, h.trusted, h.field)
	}
	if !allowed(h.allow, client) {
		// The same small HTML page as every handler's own errors.
		hdr.Set("Cache-Control", "no-store")
		errpage.Write(w, r, http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hdr.Set("Allow", Methods)
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
