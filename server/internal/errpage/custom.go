package errpage

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
)

// MaxCustomSize bounds a custom error page file; pages are held in memory.
const MaxCustomSize = 1 << 20

// Pages are a site's own error pages, by status 400..599 (config.ErrorPages).
// They are read when the configuration is built; a reload reads them again.
type Pages struct {
	byCode [200]*page
}

// Provider is implemented by a ResponseWriter (or one it wraps, through
// Unwrap) that knows the error pages of the request's site.
type Provider interface {
	ErrorPages() *Pages
}

// Has reports whether p has a page for code.
func (p *Pages) Has(code int) bool { return p != nil && p.get(code) != nil }

func (p *Pages) get(code int) *page {
	if p == nil || code < 400 || code > 599 {
		return nil
	}
	return p.byCode[code-400]
}

// customFor walks the writer chain for a Provider with a page for code.
func customFor(w http.ResponseWriter, code int) *page {
	if code < 400 {
		return nil
	}
	for w != nil {
		if pv, ok := w.(Provider); ok {
			return pv.ErrorPages().get(code)
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
	return nil
}

// LoadPages reads the pages: files maps a status ("404") or class ("4xx",
// "5xx") to a file under root; a status wins over its class. Files are
// opened inside root (os.Root: no symbolic link out of it).
func LoadPages(root string, files map[string]string) (*Pages, error) {
	if len(files) == 0 {
		return nil, nil
	}
	dir, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	read := func(name string) (*page, error) {
		f, err := dir.Open(filepath.Clean(name))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, MaxCustomSize+1))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		if len(b) > MaxCustomSize {
			return nil, fmt.Errorf("%s: larger than %d bytes", name, MaxCustomSize)
		}
		ct := mime.TypeByExtension(filepath.Ext(name))
		if ct == "" {
			ct = ContentType
		}
		return &page{body: b, cl: []string{strconv.Itoa(len(b))}, ct: []string{ct}}, nil
	}
	p := &Pages{}
	// Classes first, then single statuses over them.
	for pass := 0; pass < 2; pass++ {
		for key, name := range files {
			class := len(key) == 3 && key[1:] == "xx"
			if class != (pass == 0) {
				continue
			}
			pg, err := read(name)
			if err != nil {
				return nil, err
			}
			if class {
				base := int(key[0]-'0') * 100
				for c := base; c < base+100; c++ {
					if c >= 400 && c <= 599 {
						p.byCode[c-400] = pg
					}
				}
				continue
			}
			c, err := strconv.Atoi(key)
			if err != nil || c < 400 || c > 599 {
				return nil, fmt.Errorf("status %q: use 400 to 599, 4xx or 5xx", key)
			}
			p.byCode[c-400] = pg
		}
	}
	return p, nil
}
