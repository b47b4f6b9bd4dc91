package static

import (
	"html"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/arkaweb/arka/server/internal/errpage"
)

// maxListing bounds the entries of a directory listing (page size and
// the stat calls made for it): a larger directory lists the first ones in
// the page's order (directories first, then by name) and says how many
// more there are.
const maxListing = 5000

// maxListingRead bounds the names read from one directory for a listing
// (memory: about 50 bytes a name, 5 MB at the bound; time: reading and
// sorting them). A directory with more lists the first maxListing, in the
// page's order, of the names read, and says that others are missing from
// anywhere in it. A variable for tests.
var maxListingRead = 100_000

// dirName is a directory entry as read for a listing: its name, and
// whether it is (or leads to) a directory.
type dirName struct {
	name string
	dir  bool
}

// readNames reads the names of directory name (dot files left out unless
// allowed), at most maxListingRead; full reports that there were more.
// Only symbolic links are looked at with stat (through the root: a link
// leading outside it is left out, it could not be served either), to know
// whether they lead to directories.
func (h *Handler) readNames(name string) (names []dirName, full bool, err error) {
	d, err := h.root.Open(name)
	if err != nil {
		return nil, false, err
	}
	defer d.Close()
	for {
		ents, err := d.ReadDir(1024)
		for _, e := range ents {
			n := e.Name()
			if !h.dotfiles && strings.HasPrefix(n, ".") {
				continue
			}
			if len(names) == maxListingRead {
				return names, true, nil
			}
			dir := e.IsDir()
			if e.Type()&fs.ModeSymlink != 0 {
				fi, err := h.root.Stat(joinName(name, n))
				if err != nil {
					continue
				}
				dir = fi.IsDir()
			}
			names = append(names, dirName{n, dir})
		}
		if err != nil || len(ents) == 0 {
			return names, false, nil // io.EOF, or a read error: what was read
		}
	}
}

func joinName(dir, n string) string {
	if dir == "." {
		return n
	}
	return dir + "/" + n
}

// listing answers a directory request with an HTML list of its entries
// (browse = true): directories first, then files, each by name; names
// escaped (HTML and URL), dot files hidden unless allow_dotfiles, symbolic
// links that lead outside root left out, readable on a phone (viewport,
// large touch targets). At most maxListing entries are listed, the first
// in that order; the page says how many are not.
func (h *Handler) listing(w http.ResponseWriter, r *http.Request, name, p string) {
	names, full, err := h.readNames(name)
	if denied(err) {
		// Searchable, not readable. Rare: os.Root opens every directory
		// on a path, so an index file under it is already denied.
		h.forbidden(w, r, &entry{denied: []*denial{newDenial(name, "open", err, nil)}})
		return
	}
	if err != nil {
		errpage.Write(w, r, http.StatusNotFound)
		return
	}
	slices.SortFunc(names, func(a, b dirName) int {
		if a.dir != b.dir {
			if a.dir {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	type row struct {
		name  string
		dir   bool
		size  int64
		mtime string
	}
	rows := make([]row, 0, min(len(names), maxListing))
	rest := 0 // entries read but not listed
	for i, e := range names {
		if len(rows) == maxListing {
			rest = len(names) - i
			break
		}
		// Stat through the root: a link leading outside it fails, and
		// is not listed (it could not be served either).
		fi, err := h.root.Stat(joinName(name, e.name))
		if err != nil || !fi.IsDir() && !fi.Mode().IsRegular() {
			continue
		}
		rows = append(rows, row{name: e.name, dir: fi.IsDir(), size: fi.Size(), mtime: fi.ModTime().UTC().Format("2006-01-02 15:04")})
	}
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
	switch {
	case full:
		b.WriteString("<p>This directory has more than " + strconv.Itoa(maxListingRead) +
			" entries. Only " + strconv.Itoa(maxListingRead) + " were read, in the file system's order, and the first " +
			strconv.Itoa(len(rows)) + " of those are listed: entries may be missing anywhere in this list.</p>\n")
	case rest > 0:
		b.WriteString("<p>Only the first " + strconv.Itoa(len(rows)) + " entries are listed; " +
			strconv.Itoa(rest) + " more are not.</p>\n")
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
