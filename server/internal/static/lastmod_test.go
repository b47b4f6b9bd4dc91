package static_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arkaweb/arka/config"
	"github.com/arkaweb/arka/server/internal/enginetest"
)

// lastModAndDate returns a response's Last-Modified and Date, parsed.
func lastModAndDate(t *testing.T, r *response) (lm, date time.Time) {
	t.Helper()
	lm, err1 := http.ParseTime(r.Header().Get("Last-Modified"))
	date, err2 := http.ParseTime(r.Header().Get("Date"))
	if err1 != nil || err2 != nil {
		t.Fatalf("Last-Modified %q, Date %q", r.Header().Get("Last-Modified"), r.Header().Get("Date"))
	}
	return lm, date
}

// A file modified in the future (a board without a real-time clock before
// NTP has set it) is sent with Last-Modified no later than Date (RFC 9110
// section 8.8.2.1), and that Last-Modified validates: sent back in
// If-Modified-Since it gets 304, in If-Unmodified-Since it is no 412.
// Its compressed variant says the same.
func TestFutureModificationTime(t *testing.T) {
	engines(t, func(t *testing.T, on func(http.Handler) *enginetest.Client) {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "future.txt"), []byte(strings.Repeat("from the future ", 100)), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		h, _ := unitHandler(t, dir, config.Static{})
		c := on(h)
		for _, ae := range []string{"identity", "gzip"} {
			r := serve(t, c, "/future.txt", "Accept-Encoding: "+ae)
			lm, date := lastModAndDate(t, r)
			if r.Code != 200 || lm.After(date) {
				t.Fatalf("%s: %d, Last-Modified %v later than Date %v", ae, r.Code, lm, date)
			}
			got := r.Header().Get("Last-Modified")
			if r := serve(t, c, "/future.txt", "Accept-Encoding: "+ae, "If-Modified-Since: "+got); r.Code != 304 {
				t.Errorf("%s: If-Modified-Since its Last-Modified: %d, want 304", ae, r.Code)
			}
			if r := serve(t, c, "/future.txt", "Accept-Encoding: "+ae, "If-Unmodified-Since: "+got); r.Code != 200 {
				t.Errorf("%s: If-Unmodified-Since its Last-Modified: %d, want 200", ae, r.Code)
			}
		}
	})
}

// Once the clock passes a file's future modification time, the real one
// is sent.
func TestFutureModificationTimePasses(t *testing.T) {
	dir := t.TempDir()
	mtime := time.Now().Add(2 * time.Second).Truncate(time.Second)
	write(t, filepath.Join(dir, "soon.txt"), []byte("soon"), mtime)
	h, _ := unitHandler(t, dir, config.Static{})
	c := enginetest.Serve(t, h).Clients()[0]
	r := serve(t, c, "/soon.txt")
	if lm, date := lastModAndDate(t, r); !lm.Before(mtime) || lm.After(date) {
		t.Fatalf("before %v: Last-Modified %v, Date %v", mtime, lm, date)
	}
	time.Sleep(time.Until(mtime.Add(1100 * time.Millisecond)))
	r = serve(t, c, "/soon.txt")
	if lm, _ := lastModAndDate(t, r); !lm.Equal(mtime) {
		t.Errorf("after %v: Last-Modified %v, want the file's", mtime, lm)
	}
	if r := serve(t, c, "/soon.txt", "If-Range: "+mtime.UTC().Format(http.TimeFormat), "Range: bytes=1-"); r.Code != 206 {
		t.Errorf("If-Range with the file's time: %d, want 206", r.Code)
	}
}
