package static_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/static"
)

// manyFiles makes dir/many with n empty files f0000.. and two entries that
// sort first as directories: zz/ and lnk (a link to zz).
func manyFiles(t *testing.T, dir string, n int) {
	t.Helper()
	many := filepath.Join(dir, "many")
	if err := os.MkdirAll(filepath.Join(many, "zz"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("zz", filepath.Join(many, "lnk")); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(many, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func list(t *testing.T, h http.Handler, path string) string {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	if w.Code != 200 {
		t.Fatalf("%s: %d", path, w.Code)
	}
	return w.Body.String()
}

// A directory with more entries than a listing shows lists the first ones
// in the page's order (directories first, then by name), not a readdir
// subset sorted afterwards, and says how many are left out.
func TestListingFirstInOrder(t *testing.T) {
	dir := t.TempDir()
	manyFiles(t, dir, 6000)
	h, _ := unitHandler(t, dir, config.Static{Browse: true})
	b := list(t, h, "/many/")
	if i, j := strings.Index(b, `href="./lnk/"`), strings.Index(b, `href="./zz/"`); i < 0 || j < i {
		t.Errorf("directories lnk/, zz/ not first: at %d, %d", i, j)
	}
	last := -1
	for i := range 4998 { // 5000 rows: lnk/, zz/ and f0000..f4997
		at := strings.Index(b, fmt.Sprintf(`href="./f%04d"`, i))
		if at < last {
			t.Fatalf("f%04d missing or out of order (at %d, previous at %d)", i, at, last)
		}
		last = at
	}
	if strings.Contains(b, `href="./f4998"`) {
		t.Error("f4998 listed: more than 5000 entries")
	}
	if !strings.Contains(b, "Only the first 5000 entries are listed; 1002 more are not.") {
		t.Errorf("no count of the entries left out:\n%s", b[len(b)-300:])
	}
}

// Past the bound on names read, the page says that the listing is made
// from a part of the directory only.
func TestListingReadBound(t *testing.T) {
	dir := t.TempDir()
	manyFiles(t, dir, 300)
	defer static.SetMaxListingRead(static.SetMaxListingRead(100))
	h, _ := unitHandler(t, dir, config.Static{Browse: true})
	b := list(t, h, "/many/")
	if n := strings.Count(b, `href="./`); n != 100 {
		t.Errorf("%d entries listed, want the 100 read", n)
	}
	if !strings.Contains(b, "This directory has more than 100 entries. Only 100 were read, in the file system's order, and the first 100 of those are listed: entries may be missing anywhere in this list.") {
		t.Errorf("no word of the partial listing:\n%s", b[len(b)-400:])
	}
}
