package wifiimage

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/arkaweb/arka/appliance/build/image"
)

// nonFreeServer serves firmware-nonfree's files the way NonFreeBaseURL
// does. With ARKA_NONFREE_DIR (a directory holding the real files, e.g.
// copied from Raspberry Pi OS's /lib/firmware/brcm) it serves those and
// the recorded SHA-256s stay; otherwise it serves stand-ins and records
// their SHA-256s for the test's duration (this machine cannot reach
// GitHub, and the firmware is not in this repository). It counts requests.
func nonFreeServer(t *testing.T) (url string, hits *atomic.Int64, real bool) {
	t.Helper()
	dir := os.Getenv("ARKA_NONFREE_DIR")
	body := map[string][]byte{}
	saved := NonFreeFiles
	t.Cleanup(func() { NonFreeFiles = saved })
	NonFreeFiles = map[string]string{}
	for name, h := range saved {
		if dir != "" {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			body[name], NonFreeFiles[name] = b, h
			continue
		}
		body[name] = []byte("stand-in for " + name + "\n")
		NonFreeFiles[name] = sum(body[name])
	}
	hits = new(atomic.Int64)
	prefix := "/" + NonFreeCommit + "/" + NonFreeDir + "/"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		name, ok := strings.CutPrefix(r.URL.Path, prefix)
		if b, found := body[name]; ok && found {
			w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, hits, dir != ""
}

func needDebian(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("downloads Debian packages")
	}
	if out, err := exec.Command("apt-cache", "show", "--no-all-versions", "firmware-brcm80211").Output(); err != nil || len(out) == 0 {
		t.Skip("apt does not know firmware-brcm80211 (add Debian's non-free-firmware component, as .ci/run does)")
	}
}

func debCache(t *testing.T) string {
	if c := os.Getenv("ARKA_DEB_CACHE"); c != "" {
		return c
	}
	return t.TempDir()
}

// TestFirmwarePerBoard fetches Debian's packages (skipped when apt does not
// know firmware-brcm80211: the non-free-firmware component is missing) and
// firmware-nonfree's files from a local server, and lists, per board, the
// chip and the files the image carries: every board has its firmware, CLM
// blob and NVRAM under the names brcmfmac asks for, the Zero 2 W's from
// firmware-nonfree with their recorded SHA-256.
func TestFirmwarePerBoard(t *testing.T) {
	needDebian(t)
	url, _, real := nonFreeServer(t)
	cache, nfDir := debCache(t), ""
	if !real {
		nfDir = t.TempDir() // stand-ins must not land in a shared cache
		t.Log("firmware-nonfree: stand-in files (set ARKA_NONFREE_DIR to a directory with the real ones to check their SHA-256 too)")
	}
	res, err := Collect(Options{CacheDir: cache, Logf: t.Logf, NonFreeBaseURL: url, NonFreeDir: nfDir})
	if err != nil {
		t.Fatal(err)
	}
	if res.NonFreeErr != nil || len(res.Left) != 0 || res.NonFree != NonFreeRepo+"@"+NonFreeCommit {
		t.Fatalf("firmware-nonfree not used: %v, left %v, %q", res.NonFreeErr, res.Left, res.NonFree)
	}
	src := map[string]string{}
	for _, f := range res.Files {
		src[f.Path] = f.Source
	}
	covered := map[string]bool{}
	for _, p := range res.Boards {
		b := p.Board
		covered[b.Name+b.Chip] = true
		t.Logf("%-30s %-10s %s", b.Name, b.Chip, strings.Join(p.Files, " "))
		if len(p.Files) != 3 {
			t.Errorf("%s (%s): %d files, want firmware, CLM blob and NVRAM", b.Name, b.Chip, len(p.Files))
		}
		for i, ext := range []string{".bin", ".clm_blob", ".txt"} {
			if i >= len(p.Files) {
				break
			}
			f := p.Files[i]
			if src[f] == "" {
				t.Errorf("%s: %s is not in the image", b.Name, f)
			}
			// What brcmfmac asks for: <Base>.<compatible><ext>, else <Base><ext>.
			base := path.Base(f)
			if base != b.Base+"."+b.Compatible+ext && base != b.Base+ext {
				t.Errorf("%s: %s is not a name brcmfmac asks for (%s.%s%s or %s%s)", b.Name, f, b.Base, b.Compatible, ext, b.Base, ext)
			}
			if ext == ".txt" && base != b.Base+"."+b.Compatible+ext {
				t.Errorf("%s: NVRAM %s, want the board's own %s.%s.txt", b.Name, f, b.Base, b.Compatible)
			}
			if b.NonFree != "" {
				if want, ok := NonFreeFiles[b.NonFree+ext]; ok {
					got, err := os.ReadFile(src[f])
					if err != nil || sum(got) != want {
						t.Errorf("%s: %s is not firmware-nonfree's %s%s (%v)", b.Name, f, b.NonFree, ext, err)
					}
				} else if !strings.Contains(src[f], string(filepath.Separator)+"unpacked"+string(filepath.Separator)) {
					t.Errorf("%s: %s from %s, want Debian's", b.Name, f, src[f])
				}
			}
		}
	}
	for _, b := range Boards {
		if !covered[b.Name+b.Chip] {
			t.Errorf("%s (%s) has no firmware in the image", b.Name, b.Chip)
		}
	}
	for _, f := range []string{"/lib/firmware/regulatory.db", "/lib/firmware/regulatory.db.p7s"} {
		if src[f] == "" {
			t.Errorf("%s missing", f)
		}
	}
	t.Logf("packages: %v, %s", res.Packages, res.NonFree)
}

// TestNonFreeUnavailable: without the network the Zero 2 W is listed as
// left out, with the reason, and every other board keeps its firmware;
// with SkipNonFree nothing is asked for.
func TestNonFreeUnavailable(t *testing.T) {
	needDebian(t)
	url, hits, _ := nonFreeServer(t)
	res, err := Collect(Options{CacheDir: debCache(t), NonFreeBaseURL: url + "/gone", NonFreeDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.NonFreeErr, ErrNonFreeUnavailable) || len(res.Left) != 2 || res.NonFree != "" {
		t.Fatalf("NonFreeErr %v, left %v, NonFree %q: want both Zero 2 W chips left out as unavailable", res.NonFreeErr, res.Left, res.NonFree)
	}
	for _, b := range res.Left {
		if b.Compatible != "raspberrypi,model-zero-2-w" {
			t.Errorf("%s left out", b.Name)
		}
	}
	if len(res.Boards) != len(Boards)-2 {
		t.Errorf("%d boards placed, want %d", len(res.Boards), len(Boards)-2)
	}
	for _, f := range res.Files {
		if strings.Contains(f.Path, "model-zero-2-w") {
			t.Errorf("%s in the image without firmware-nonfree", f.Path)
		}
	}
	n := hits.Load()
	res, err = Collect(Options{CacheDir: debCache(t), NonFreeBaseURL: url, SkipNonFree: true})
	if err != nil || res.NonFreeErr != nil || len(res.Left) != 2 {
		t.Fatalf("SkipNonFree: %v, %v, left %d", err, res.NonFreeErr, len(res.Left))
	}
	if hits.Load() != n {
		t.Errorf("SkipNonFree downloaded anyway")
	}
}

// TestNonFreeChecked: files are downloaded once into the cache, a download
// with another SHA-256 is refused and not cached, and a changed file in the
// cache is refused (never put into an image).
func TestNonFreeChecked(t *testing.T) {
	url, hits, _ := nonFreeServer(t)
	cache := t.TempDir()
	names := []string{"brcmfmac43436-sdio.bin", "brcmfmac43436-sdio.txt"}
	o := Options{CacheDir: cache, NonFreeBaseURL: url, Logf: t.Logf}
	paths, err := fetchNonFree(o, names)
	if err != nil || len(paths) != 2 || hits.Load() != 2 {
		t.Fatalf("first fetch: %v, %v, %d requests", err, paths, hits.Load())
	}
	if _, err := fetchNonFree(o, names); err != nil || hits.Load() != 2 {
		t.Fatalf("second fetch: %v, %d requests (want the cache used)", err, hits.Load())
	}

	// A changed file in the cache.
	p := paths["brcmfmac43436-sdio.txt"]
	if err := os.WriteFile(p, []byte("boardflags=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = fetchNonFree(o, names)
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), p) {
		t.Errorf("changed cache file: %v, want a SHA-256 mismatch naming %s", err, p)
	}
	os.Remove(p)

	// The server sends other bytes.
	NonFreeFiles["brcmfmac43436-sdio.txt"] = strings.Repeat("0", 64)
	_, err = fetchNonFree(o, names)
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "refusing firmware") {
		t.Errorf("wrong download: %v, want it refused", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("the refused download was cached (%v)", err)
	}

	// A name without a recorded hash is never fetched.
	if _, err := fetchNonFree(o, []string{"brcmfmac43436s-sdio.clm_blob"}); err == nil || !strings.Contains(err.Error(), "no recorded SHA-256") {
		t.Errorf("unrecorded name: %v", err)
	}
}

// TestNonFreeTable: every recorded hash is a SHA-256, every board taken
// from firmware-nonfree has at least its firmware and NVRAM there, and the
// instructions for an offline machine name each file, hash and URL.
func TestNonFreeTable(t *testing.T) {
	hex := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for n, h := range NonFreeFiles {
		if !hex.MatchString(h) {
			t.Errorf("%s: %q is not a SHA-256", n, h)
		}
	}
	for _, b := range Boards {
		if b.NonFree == "" {
			continue
		}
		for _, ext := range []string{".bin", ".txt"} {
			if NonFreeFiles[b.NonFree+ext] == "" {
				t.Errorf("%s (%s): no %s%s recorded", b.Name, b.Chip, b.NonFree, ext)
			}
		}
	}
	how := NonFreeHowTo("/cache")
	for n, h := range NonFreeFiles {
		if !strings.Contains(how, h+"  "+n) || !strings.Contains(how, NonFreeURL("", n)) {
			t.Errorf("NonFreeHowTo lacks %s:\n%s", n, how)
		}
	}
	if !strings.Contains(how, NonFreeCache("/cache")) {
		t.Errorf("NonFreeHowTo does not say where:\n%s", how)
	}
}

// TestKernelAsksForBase reads the names kernel.rpi's brcmfmac.ko asks for
// (its "brcm/<name>-sdio" strings) and checks that every board's Base is
// one of them, so the files are placed where this kernel looks.
func TestKernelAsksForBase(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads kernel.rpi from the module proxy")
	}
	bd, err := image.LoadBoard("rpi")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := image.ModuleDir("go", bd.Kernel)
	if err != nil {
		t.Skip(err)
	}
	kos, _ := filepath.Glob(filepath.Join(dir, "lib", "modules", "*", "kernel", "drivers", "net", "wireless", "broadcom", "brcm80211", "brcmfmac", "brcmfmac.ko"))
	if len(kos) != 1 {
		t.Fatalf("brcmfmac.ko in %s: %v", dir, kos)
	}
	ko, err := os.ReadFile(kos[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range Boards {
		if !bytes.Contains(ko, []byte("brcm/"+b.Base+"\x00")) {
			t.Errorf("%s (%s): brcmfmac.ko never asks for brcm/%s", b.Name, b.Chip, b.Base)
		}
	}
}
