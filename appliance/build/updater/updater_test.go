package updater

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arkaweb/arka/appliance/build/image"
	"github.com/arkaweb/arka/appliance/device/ota"
	"github.com/arkaweb/arka/appliance/fat16"
	"github.com/arkaweb/arka/appliance/partition"
)

// smallImage writes a sparse image with the parts the updater reads: the
// partition table, a boot FAT16 with arka-build.json and the start of a
// SquashFS. (The end-to-end tests send real images to a real device.)
func smallImage(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "arka-amd64.img")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size = 1200 << 20
	f.Truncate(size)
	tab, err := partition.Layout(size/partition.SectorSize, "arka", partition.TypeRootAMD64)
	if err != nil {
		t.Fatal(err)
	}
	if err := partition.Write(f, tab); err != nil {
		t.Fatal(err)
	}
	p1, _ := tab.Entry(partition.Boot)
	info, _ := json.Marshal(image.BuildInfo{Board: "amd64", Version: "v2", SBOMHash: "new"})
	if _, err := fat16.Write(io.NewOffsetWriter(f, p1.Offset()), []fat16.File{
		{Path: "cmdline.txt", Data: image.CmdlineFile("root=/dev/sda2")},
		{Path: image.BuildInfoFile, Data: info},
	}, fat16.Options{Label: "ARKA", ModTime: time.Unix(1764441516, 0)}); err != nil {
		t.Fatal(err)
	}
	p2, _ := tab.Entry(partition.RootA)
	sb := make([]byte, 4096)
	copy(sb, "hsqs")
	binary.LittleEndian.PutUint64(sb[40:], 10000)
	f.WriteAt(sb, p2.Offset())
	return p
}

// device is a stand-in for the device's web UI that records the requests.
type device struct {
	mu   sync.Mutex
	reqs []string
	h    func(w http.ResponseWriter, r *http.Request)
}

func (d *device) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.reqs = append(d.reqs, r.Method+" "+r.URL.Path)
	d.mu.Unlock()
	io.Copy(io.Discard, r.Body)
	d.h(w, r)
}

func (d *device) requests() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.reqs, ", ")
}

func updateAgainst(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) (*device, error) {
	d := &device{h: h}
	srv := httptest.NewServer(d)
	defer srv.Close()
	_, err := Update(context.Background(), Options{Image: smallImage(t), Host: srv.Listener.Addr().String(), Password: "pw", PasswordFile: "/x/arka-amd64.gokr-pw.txt", Timeout: 5 * time.Second})
	return d, err
}

func oneLineErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %v, want one line with %q", err, want)
	}
}

func TestWrongPassword(t *testing.T) {
	d, err := updateAgainst(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="gokrazy"`)
		http.Error(w, "invalid username/password", http.StatusUnauthorized)
	})
	if !errors.Is(err, ErrWrongPassword) {
		t.Errorf("%v, want ErrWrongPassword", err)
	}
	oneLineErr(t, err, "with the password from /x/arka-amd64.gokr-pw.txt")
	if got := d.requests(); got != "GET /arka/update" {
		t.Errorf("requests: %s, want only the first status request", got)
	}
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = Update(context.Background(), Options{Image: smallImage(t), Host: addr, Password: "pw"})
	if !errors.Is(err, ErrUnreachable) {
		t.Errorf("%v, want ErrUnreachable", err)
	}
	oneLineErr(t, err, "cannot reach http://"+addr)
}

func TestHashMismatchSwitchesNothing(t *testing.T) {
	d, err := updateAgainst(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/arka/update":
			json.NewEncoder(w).Encode(ota.Status{BootID: "b", Build: ota.Build{Board: "amd64", Version: "v1", SBOMHash: "old"}, Running: 2, KernelRoot: 2, NextBoot: 2})
		case "/arka/update/preflight":
		case "/update/root":
			io.WriteString(w, strings.Repeat("ab", 32))
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		}
	})
	if !errors.Is(err, ErrHashMismatch) {
		t.Errorf("%v, want ErrHashMismatch", err)
	}
	oneLineErr(t, err, "nothing switched")
	if got := d.requests(); got != "GET /arka/update, POST /arka/update/preflight, PUT /update/root" {
		t.Errorf("requests: %s", got)
	}
}

func TestRefusesOtherBoardsAndOldImages(t *testing.T) {
	_, err := updateAgainst(t, func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(ota.Status{Build: ota.Build{Board: "rpi"}, Running: 2, KernelRoot: 2})
	})
	oneLineErr(t, err, "the image is for board amd64, the device runs a rpi image")
	_, err = updateAgainst(t, http.NotFound)
	oneLineErr(t, err, "no Arka update agent")
}

// TestPreflightRefusalWritesNothing: a device that refuses the preflight
// (here: /perm full) gets nothing written, and the refusal is one line.
func TestPreflightRefusalWritesNothing(t *testing.T) {
	d, err := updateAgainst(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/arka/update":
			json.NewEncoder(w).Encode(ota.Status{BootID: "b", Build: ota.Build{Board: "amd64", Version: "v1", SBOMHash: "old"}, Running: 2, KernelRoot: 2, NextBoot: 2})
		case "/arka/update/preflight":
			http.Error(w, "/perm has 1.9 MiB free, an update needs 4.0 MiB: the update could not record its trial, so nothing was written", http.StatusInsufficientStorage)
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		}
	})
	if !errors.Is(err, ErrRefused) {
		t.Errorf("%v, want ErrRefused", err)
	}
	oneLineErr(t, err, "/perm has 1.9 MiB free")
	if got := d.requests(); got != "GET /arka/update, POST /arka/update/preflight" {
		t.Errorf("requests: %s", got)
	}
}
