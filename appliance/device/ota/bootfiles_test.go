package ota

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arkaweb/arka/appliance/build/image"
	"github.com/arkaweb/arka/appliance/device/supervise"
	"github.com/arkaweb/arka/appliance/fat16"
)

func TestBootBuildFileIsTheImages(t *testing.T) {
	if bootBuildFile != "/"+image.BuildInfoFile {
		t.Fatalf("bootBuildFile %q, the image builder writes %q", bootBuildFile, image.BuildInfoFile)
	}
}

// bootFS returns a boot file system of build b, as the image builder lays
// it out: its kernel, command line (root= naming partition 2, plus
// extra), systemd-boot entry, firmware and arka-build.json.
func bootFS(t *testing.T, b Build, kernel byte, extra string) []byte {
	t.Helper()
	cmdline := testCmdline
	if extra != "" {
		cmdline += " " + extra
	}
	info, _ := json.Marshal(image.BuildInfo{Board: b.Board, Version: b.Version, BuildTimestamp: b.BuildTimestamp, SBOMHash: b.SBOMHash})
	var w bytes.Buffer
	buf := &writerAt{&w}
	_, err := fat16.Write(buf, []fat16.File{
		{Path: "vmlinuz", Data: bytes.Repeat([]byte{kernel}, 200<<10)},
		{Path: "EFI/BOOT/BOOTX64.EFI", Data: bytes.Repeat([]byte{kernel ^ 0xff}, 70<<10)},
		{Path: "cmdline.txt", Data: image.CmdlineFile(cmdline)},
		{Path: "loader/entries/gokrazy.conf", Data: image.LoaderEntry(cmdline)},
		{Path: image.BuildInfoFile, Data: info},
	}, fat16.Options{Label: "ARKA", ModTime: time.Unix(1764441516, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return w.Bytes()
}

type writerAt struct{ b *bytes.Buffer }

func (w *writerAt) WriteAt(p []byte, off int64) (int, error) {
	if n := int(off) + len(p); n > w.b.Len() {
		w.b.Write(make([]byte, n-w.b.Len()))
	}
	copy(w.b.Bytes()[off:], p)
	return len(p), nil
}

// writeBootFS writes a boot file system onto the device's boot partition
// as gokrazy's /update/bootonly does (from offset 0; the partition is
// larger than the file system).
func writeBootFS(t *testing.T, d *fileDevice, fs []byte) {
	t.Helper()
	f, err := os.OpenFile(d.boot, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(fs, 0); err != nil {
		t.Fatal(err)
	}
}

func bootInfo(t *testing.T, d *fileDevice) BootInfo {
	t.Helper()
	f, err := d.OpenBoot()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bi, err := ReadBootInfo(f)
	if err != nil {
		t.Fatal(err)
	}
	return bi
}

func bootKernel(t *testing.T, d *fileDevice) byte {
	f, _ := d.OpenBoot()
	defer f.Close()
	b, err := readFATFile(f, "/vmlinuz")
	if err != nil {
		t.Fatal(err)
	}
	return b[0]
}

var (
	v1Build = Build{Board: "amd64", Version: "v1", SBOMHash: "sbom-v1"}
	v2Build = Build{Board: "amd64", Version: "v2", SBOMHash: "sbom-v2"}
)

// bootDevice is a device running v1 from partition 2 with v1's boot files
// on a 2 MiB boot partition, its agent, and the status file.
func bootDevice(t *testing.T) (*fileDevice, *Agent, string) {
	d := newFileDevice(t)
	writeBootFS(t, d, make([]byte, 2<<20))
	writeBootFS(t, d, bootFS(t, v1Build, 0x11, ""))
	d.builds = map[int]Build{2: v1Build}
	status := filepath.Join(t.TempDir(), "perm", "arka", "update-status.json")
	a := newAgent(t, d, status, 2, 2)
	a.Build = v1Build
	a.PermOnRootOK = true
	a.Perm = filepath.Dir(filepath.Dir(status))
	os.MkdirAll(filepath.Dir(status), 0o755)
	a.Start()
	return d, a, status
}

// updateTo runs the device side of an update to v2 with other boot files
// (kernel 0x22, an extra kernel argument) up to its trial boot, whose
// agent it returns.
func updateTo(t *testing.T, d *fileDevice, old *Agent, status string, probation float64) *Agent {
	t.Helper()
	if err := old.Preflight(PreflightRequest{To: v2Build, RootSize: 40000}); err != nil {
		t.Fatal(err)
	}
	if kept, err := readKept(KeptBootFile(old.bootDir(), 2)); err != nil || kept.Build != v1Build {
		t.Fatalf("after the preflight the kept boot files of partition 2: %+v, %v", kept, err)
	}
	req := d.writeRoot(t, 3)
	req.To, req.ProbationSeconds = v2Build, probation
	writeBootFS(t, d, bootFS(t, v2Build, 0x22, "arka.test=v2"))
	if err := old.PrepareTrial(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	d.builds[3] = v2Build
	if err := gokrazyPivot(d.boot); err != nil {
		t.Fatal(err)
	}
	trial := newAgent(t, d, status, 3, 2)
	trial.Build = v2Build
	trial.Start()
	return trial
}

// checkV1Boot checks that the boot partition holds v1's boot files again,
// booting partition 2.
func checkV1Boot(t *testing.T, d *fileDevice) {
	t.Helper()
	bi := bootInfo(t, d)
	if bi.Build != v1Build || bootKernel(t, d) != 0x11 || strings.Contains(bi.Cmdline, "arka.test") {
		t.Errorf("boot partition after the rollback: %+v, kernel %#x; want v1's", bi, bootKernel(t, d))
	}
	if n, trial := d.nextBoot(t); n != 2 || trial {
		t.Errorf("next boot %d (trial %v), want 2", n, trial)
	}
}

// TestBootFilesRestoredWhenTheTrialFails: the old kernel and boot files
// come back with the old root when the new build fails its trial.
func TestBootFilesRestoredWhenTheTrialFails(t *testing.T) {
	d, old, status := bootDevice(t)
	trial := updateTo(t, d, old, status, 0)
	trial.RunTrial(context.Background(), fast(Health{Targets: []Target{{Addr: "127.0.0.1:1"}}, StartTimeout: 300 * time.Millisecond}))
	<-d.rebooted
	checkV1Boot(t, d)
	at := readAttempt(t, status)
	if at.State != Failed || !strings.Contains(at.Boot, "boot files of Arka v1 (kernel, command line, firmware) restored") {
		t.Errorf("attempt: %+v", at)
	}
	back := newAgent(t, d, status, 2, 2)
	back.Build = v1Build
	back.Start()
	if back.Settle() {
		t.Error("the old root reboots again although its boot files are in place")
	}
	if st := back.Status(); st.Boot == nil || st.Boot.Build != v1Build || st.Last.State != RolledBack {
		t.Errorf("status: %+v", st)
	}
}

// TestBootFilesRestoredAfterACrashedTrial: a trial that ended without its
// agent (a panic, a hang, a power cut) leaves the new boot files; the old
// root's agent restores its own and reboots into its kernel.
func TestBootFilesRestoredAfterACrashedTrial(t *testing.T) {
	d, old, status := bootDevice(t)
	updateTo(t, d, old, status, 0) // the trial boot dies here
	back := newAgent(t, d, status, 2, 2)
	back.Build = v1Build
	back.Start()
	checkV1Boot(t, d)
	if at := readAttempt(t, status); at.State != RolledBack || !strings.Contains(at.Boot, "restored; rebooted to run its kernel") {
		t.Errorf("attempt: %+v", at)
	}
	if !back.Settle() {
		t.Fatal("no reboot into the restored kernel")
	}
	<-d.rebooted
	// The boot after that: nothing more to do.
	again := newAgent(t, d, status, 2, 2)
	again.Build = v1Build
	again.Start()
	if again.Settle() {
		t.Error("a second reboot")
	}
}

// TestBootFilesRestoredOnProbation: a crash loop after the trial passed
// returns to v1's boot files too.
func TestBootFilesRestoredOnProbation(t *testing.T) {
	probationPoll = 20 * time.Millisecond
	defer func() { probationPoll = 2 * time.Second }()
	d, old, status := bootDevice(t)
	trial := updateTo(t, d, old, status, 60)
	var polls atomic.Int32
	trial.CrashLoop = func() (string, *Evidence) {
		if polls.Add(1) < 3 {
			return "", nil
		}
		return "Arka exited 3 times in a row", &Evidence{Starts: 3, LastExit: &supervise.Exit{Status: "signal: killed", Code: -1}}
	}
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer up.Close()
	trial.RunTrial(context.Background(), fast(Health{Targets: []Target{{Addr: up.Listener.Addr().String()}}}))
	<-d.rebooted
	checkV1Boot(t, d)
	if at := readAttempt(t, status); at.State != RolledBack || !strings.Contains(at.Boot, "Arka v1") || !strings.Contains(at.Reason, "on probation") || !at.Finished.Before(at.ProbationEnds) {
		t.Errorf("attempt: %+v", at)
	}
}

// TestBootFilesSwappedOnRequest: a rollback on request restores v1's
// boot files and keeps v2's, so that a second one returns to v2's.
func TestBootFilesSwappedOnRequest(t *testing.T) {
	d, old, status := bootDevice(t)
	trial := updateTo(t, d, old, status, -1)
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer up.Close()
	trial.RunTrial(context.Background(), fast(Health{Targets: []Target{{Addr: up.Listener.Addr().String()}}}))
	if bi := bootInfo(t, d); bi.Build != v2Build {
		t.Fatalf("confirmed v2 boots %+v", bi)
	}
	if err := trial.Rollback(); err != nil {
		t.Fatal(err)
	}
	<-d.rebooted
	checkV1Boot(t, d)
	if kept, err := readKept(KeptBootFile(trial.bootDir(), 3)); err != nil || kept.Build != v2Build {
		t.Errorf("v2's boot files were not kept: %+v %v", kept, err)
	}
	d = &fileDevice{boot: d.boot, roots: d.roots, builds: d.builds, rebooted: make(chan struct{})} // the next boot
	back := newAgent(t, d, status, 2, 2)
	back.Build = v1Build
	back.Start()
	st := back.Status()
	if st.Last.State != RolledBack || st.Last.Reason != "rollback on request" || !st.Last.OnRequest() || st.Boot.Build != v1Build || len(st.Kept) != 2 {
		t.Errorf("status after the rollback: %+v", st)
	}
	if err := back.Rollback(); err != nil {
		t.Fatal(err)
	}
	<-d.rebooted
	if bi := bootInfo(t, d); bi.Build != v2Build || bootKernel(t, d) != 0x22 || !strings.Contains(bi.Cmdline, "arka.test=v2") {
		t.Errorf("after the second rollback the boot partition holds %+v", bi)
	}
	if n, trial := d.nextBoot(t); n != 3 || trial {
		t.Errorf("next boot %d (trial %v), want 3", n, trial)
	}
}

// TestBootFilesOfAnotherBuildNotRestored: a kept copy is restored only
// onto the build it belongs to.
func TestBootFilesOfAnotherBuildNotRestored(t *testing.T) {
	d, old, status := bootDevice(t)
	trial := updateTo(t, d, old, status, -1)
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer up.Close()
	trial.RunTrial(context.Background(), fast(Health{Targets: []Target{{Addr: up.Listener.Addr().String()}}}))
	// Partition 2 was since written with another build (by hand).
	d.builds[2] = Build{Version: "v0", SBOMHash: "sbom-v0"}
	trial.other = nil
	if err := trial.Rollback(); err != nil {
		t.Fatal(err)
	}
	<-d.rebooted
	if bi := bootInfo(t, d); bi.Build != v2Build {
		t.Errorf("boot partition: %+v; want v2's left alone", bi)
	}
	if n, _ := d.nextBoot(t); n != 2 {
		t.Errorf("next boot %d, want 2", n)
	}
	if at := readAttempt(t, status); !strings.Contains(at.Boot, "the kept boot files are of Arka v1") || !strings.Contains(at.Boot, "not restored") {
		t.Errorf("attempt's boot note: %q", at.Boot)
	}
}

// countingBoot counts the bytes written to a boot partition.
type countingBoot struct {
	BootPartition
	written int
}

func (c *countingBoot) WriteAt(b []byte, off int64) (int, error) {
	c.written += len(b)
	return c.BootPartition.WriteAt(b, off)
}

// TestRestoreBootWritesOnlyWhatDiffers: restoring onto nearly the same
// files writes a block or two; restoring what is there writes nothing; a
// truncated copy is refused.
func TestRestoreBootWritesOnlyWhatDiffers(t *testing.T) {
	d, _, _ := bootDevice(t)
	dir := t.TempDir()
	v1 := filepath.Join(dir, "v1.fat")
	f, _ := d.OpenBoot()
	if _, err := keepBoot(f, v1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Only the command line differs.
	writeBootFS(t, d, bootFS(t, v1Build, 0x11, "arka.test=x"))
	f, _ = d.OpenBoot()
	c := &countingBoot{BootPartition: f}
	changed, kernel, err := restoreBoot(c, v1)
	f.Close()
	if err != nil || !changed || kernel || c.written == 0 || c.written > 2*restoreBlock {
		t.Errorf("restore of a command line: changed %v, kernel %v, %d bytes written, %v", changed, kernel, c.written, err)
	}
	f, _ = d.OpenBoot()
	c = &countingBoot{BootPartition: f}
	changed, _, err = restoreBoot(c, v1)
	f.Close()
	if err != nil || changed || c.written != 0 {
		t.Errorf("restore of what is there: changed %v, %d bytes written, %v", changed, c.written, err)
	}
	b, _ := os.ReadFile(v1)
	os.WriteFile(v1, b[:len(b)/2], 0o600)
	f, _ = d.OpenBoot()
	c = &countingBoot{BootPartition: f}
	_, _, err = restoreBoot(c, v1)
	f.Close()
	if err == nil || c.written != 0 {
		t.Errorf("a truncated copy: %v, %d bytes written", err, c.written)
	}
}

// TestPreflightKeepsBootFiles: the preflight keeps the running build's
// boot files and drops the copy of the partition the update overwrites;
// boot files of another build (an update interrupted after it wrote the
// boot partition) do not replace the copy taken before.
func TestPreflightKeepsBootFiles(t *testing.T) {
	d, a, _ := bootDevice(t)
	dir := a.bootDir()
	os.MkdirAll(dir, 0o755)
	os.WriteFile(KeptBootFile(dir, 3), []byte("stale"), 0o600)
	if err := a.Preflight(PreflightRequest{To: v2Build, RootSize: 40000}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(KeptBootFile(dir, 3)); !os.IsNotExist(err) {
		t.Errorf("the copy for partition 3, which the update overwrites, is still there (%v)", err)
	}
	if kept, err := readKept(KeptBootFile(dir, 2)); err != nil || kept.Build != v1Build {
		t.Fatalf("kept for partition 2: %+v %v", kept, err)
	}
	writeBootFS(t, d, bootFS(t, v2Build, 0x22, "arka.test=v2")) // then the client died
	if err := a.Preflight(PreflightRequest{To: v2Build, RootSize: 40000}); err != nil {
		t.Fatal(err)
	}
	if kept, err := readKept(KeptBootFile(dir, 2)); err != nil || kept.Build != v1Build {
		t.Errorf("after a second preflight over v2's boot files, kept for partition 2: %+v %v", kept, err)
	}
	if st := a.Status(); st.Boot == nil || st.Boot.Build != v2Build || len(st.Kept) != 1 || st.Kept[0].Partition != 2 || st.Kept[0].Build != v1Build {
		t.Errorf("status: boot %+v, kept %+v", st.Boot, st.Kept)
	}
}
