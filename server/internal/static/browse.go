package static

import (
	"html"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/arkaweb/arka/server/internal/errpage"
)

// maxListing bounds the entries of a directory listing (memory and page
// size); a larger directory lists the first ones by name and says so.
const maxListing = 5000

// listing answers a directory request with an HTML list of its entries
// (browse = true): names escaped (HTML and URL), dot files hidden unless
// allow_dotfiles, symbolic links that lead outside root left out, readable
// on a phone (viewport, large touch targets).
func (h *Handler) listing(w http.ResponseWriter, r *http.Request, name, p string) {
	d, err := h.root.Open(name)
	if err != nil {
		errpage.Write(w, r, http.StatusNotFound)
		return
	}
	ents, err := d.ReadDir(maxListing + 1)
	d.Close()
	if err != nil && len(ents) == 0 {
		ents = nil
	}
	more := len(ents) > maxListing
	if more {
		ents = ents[:maxListing]
	}
	type row struct {
		name  string
		dir   bool
		size  int64
		mtime string
	}
	rows := make([]row, 0, len(ents))
	for _, e := range ents {
		n := e.Name()
		if !h.dotfiles && strings.HasPrefix(n, ".") {
			continue
		}
		full := n
		if name != "." {
			full = name + "/" + n
		}
		// Stat through the root: a link leading outside it fails, and
		// is not listed (it could not be served either).
		fi, err := h.root.Stat(full)
		if err != nil || !fi.IsDir() && !fi.Mode().IsRegular() {
			continue
		}
		rows = append(rows, row{name: n, dir: fi.IsDir(), size: fi.Size(), mtime: fi.ModTime().UTC().Format("2006-01-02 15:04")})
	}
	slices.SortFunc(rows, func(a, b row) int {
		if a.dir != b.dir {
			if a.dir {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	title := html.EscapeString(p)
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">" +
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Index of ")
	b.WriteString(title)
	b.WriteString("</title><style>body{font-family:system-ui,sans-serif;margin:1em auto;max-width:50em;padding:0 .8em}" +
		"table{border-collapse:collapse;width:100%}td{padding:.55em .3em;border-bottom:1px solid #ddd;vertical-align:top}" +
		"td.n{word-break:break-all}td.s,td.t{white-space:nowrap;text-align:right;color:#555;font-size:.9em}" +
		"a{text-decoration:none;display:block}@media(max-width:30em){td.t{display:none}}</style></head>\n<body><h1>Index of ")
	b.WriteString(title)
	b.WriteString("</h1>\n<table>\n")
	if p != "/" {
		b.WriteString("<tr><td class=\"n\"><a href=\"../\">../</a></td><td class=\"s\"></td><td class=\"t\"></td></tr>\n")
	}
	for _, e := range rows {
		href := url.PathEscape(e.name)
		text := html.EscapeString(e.name)
		size := humanSize(e.size)
		if e.dir {
			href += "/"
			text += "/"
			size = "—"
		}
		b.WriteString("<tr><td class=\"n\"><a href=\"./")
		b.WriteString(html.EscapeString(href))
		b.WriteString("\">")
		b.WriteString(text)
		b.WriteString("</a></td><td class=\"s\">")
		b.WriteString(size)
		b.WriteString("</td><td class=\"t\">")
		b.WriteString(e.mtime)
		b.WriteString("</td></tr>\n")
	}
	b.WriteString("</table>\n")
	if more {
		b.WriteString("<p>Only the first " + strconv.Itoa(maxListing) + " entries are listed.</p>\n")
	}
	b.WriteString("</body></html>\n")
	body := b.String()
	hd := w.Header()
	hd["Content-Type"] = []string{"text/html; charset=utf-8"}
	hd["Content-Length"] = []string{strconv.Itoa(len(body))}
	hd["Cache-Control"] = []string{"no-cache"}
	hd["X-Content-Type-Options"] = []string{"nosniff"}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write([]byte(body))
	}
}

// humanSize writes a size in bytes as "812 B", "4.2 KiB", "1.5 MiB".
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return strconv.FormatFloat(float64(n)/float64(div), 'f', 1, 64) + " " + string("KMGTP"[exp]) + "iB"
}
