package ota

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arkaweb/arka/appliance/device/supervise"
)

// fileDevice is a Device made of files: a boot FAT16 written like the image
// builder's, root partitions as files, gokrazy's testboot edit.
type fileDevice struct {
	boot     string
	roots    map[int]string
	builds   map[int]Build // what RootBuild reports (default "on-N")
	once     sync.Once
	rebooted chan struct{}
}

func newFileDevice(t *testing.T) *fileDevice {
	dir := t.TempDir()
	d := &fileDevice{boot: bootFAT(t, testCmdline), roots: map[int]string{}, rebooted: make(chan struct{})}
	for _, n := range []int{2, 3} {
		d.roots[n] = filepath.Join(dir, "root"+string(rune('0'+n)))
		os.WriteFile(d.roots[n], make([]byte, 1<<16), 0o644)
	}
	return d
}

func (d *fileDevice) OpenBoot() (BootPartition, error) { return os.OpenFile(d.boot, os.O_RDWR, 0) }
func (d *fileDevice) OpenRoot(n int) (io.ReadCloser, error) {
	return os.Open(d.roots[n])
}
func (d *fileDevice) Testboot(context.Context) error { return gokrazyTestboot(d.boot) }
func (d *fileDevice) RootBuild(n int) (Build, error) {
	if b, ok := d.builds[n]; ok {
		return b, nil
	}
	return Build{Version: "on-" + string(rune('0'+n))}, nil
}
func (d *fileDevice) Reboot() { d.once.Do(func() { close(d.rebooted) }) }

func (d *fileDevice) nextBoot(t *testing.T) (int, bool) {
	f, _ := d.OpenBoot()
	defer f.Close()
	files, err := ReadBootFiles(f)
	if err != nil {
		t.Fatal(err)
	}
	n, trial, err := NextBoot(files)
	if err != nil {
		t.Fatal(err)
	}
	return n, trial
}

// writeRoot puts a new root file system on partition n and returns the
// request that describes it.
func (d *fileDevice) writeRoot(t *testing.T, n int) TestbootRequest {
	b := make([]byte, 40000)
	rand.Read(b)
	copy(b, "hsqs")
	f, err := os.OpenFile(d.roots[n], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(b, 0)
	f.Close()
	sum := sha256.Sum256(b)
	return TestbootRequest{To: Build{Version: "v2", SBOMHash: "new"}, RootSHA256: hex.EncodeToString(sum[:]), RootSize: int64(len(b))}
}

func newAgent(t *testing.T, d *fileDevice, statusFile string, running, kernelRoot int) *Agent {
	return &Agent{StatusFile: statusFile, Build: Build{Version: "v" + string(rune('0'+running))}, BootID: "boot",
		Running: running, KernelRoot: kernelRoot, Device: d, Logf: t.Logf}
}

func readAttempt(t *testing.T, path string) Attempt {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var at Attempt
	if err := json.Unmarshal(b, &at); err != nil {
		t.Fatal(err)
	}
	return at
}

func httpCode(err error) int {
	var he *httpError
	if errors.As(err, &he) {
		return he.code
	}
	return 0
}

// TestUpdateConfirmed follows a good update: prepared on the old root,
// trial boot of the new one, health check passes, root= now names it.
func TestUpdateConfirmed(t *testing.T) {
	d := newFileDevice(t)
	status := filepath.Join(t.TempDir(), "perm", "arka", "update-status.json")
	old := newAgent(t, d, status, 2, 2)
	old.Start()
	req := d.writeRoot(t, 3)
	if err := old.PrepareTrial(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if at := readAttempt(t, status); at.State != Pending || at.Partition != 3 || at.From.Version != "v2" || at.To.SBOMHash != "new" {
		t.Errorf("after PrepareTrial: %+v", at)
	}
	if n, trial := d.nextBoot(t); n != 3 || !trial {
		t.Errorf("next boot %d (trial %v), want a trial of 3", n, trial)
	}
	if st := old.Status(); st.NextBoot != 3 || !st.NextIsTrial || st.Last == nil || st.Last.State != Pending {
		t.Errorf("status: %+v", st)
	}
	// A second request before the reboot: the flag is already set.
	if err := old.PrepareTrial(context.Background(), req); httpCode(err) != http.StatusConflict {
		t.Errorf("second PrepareTrial: %v", err)
	}

	// The trial boot: gokrazy's init pivoted into partition 3.
	if err := gokrazyPivot(d.boot); err != nil {
		t.Fatal(err)
	}
	trial := newAgent(t, d, status, 3, 2)
	trial.Start()
	if at := readAttempt(t, status); at.State != Trial || at.Started.IsZero() {
		t.Errorf("on the trial boot: %+v", at)
	}
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer up.Close()
	trial.RunTrial(context.Background(), fast(Health{Targets: []Target{{Addr: up.Listener.Addr().String()}}}))
	at := readAttempt(t, status)
	if at.State != Confirmed || at.HealthySeconds <= 0 || at.Reason != "" {
		t.Errorf("after the health check: %+v", at)
	}
	if n, trial := d.nextBoot(t); n != 3 || trial {
		t.Errorf("next boot %d (trial %v), want 3", n, trial)
	}
	select {
	case <-d.rebooted:
		t.Error("rebooted after a passed check")
	default:
	}
	// Until the next reboot the trial boot refuses to prepare another.
	if err := trial.PrepareTrial(context.Background(), d.writeRoot(t, 2)); httpCode(err) != http.StatusConflict || !strings.Contains(err.Error(), "reboot it") {
		t.Errorf("PrepareTrial on a trial boot: %v", err)
	}
	// The next boot is a normal boot of partition 3.
	again := newAgent(t, d, status, 3, 3)
	again.Start()
	if at := readAttempt(t, status); at.State != Confirmed {
		t.Errorf("after a reboot: %+v", at)
	}
}

// TestUpdateRolledBack follows a bad update: the health check fails, the
// agent records why and reboots; the old root reports the rollback.
func TestUpdateRolledBack(t *testing.T) {
	d := newFileDevice(t)
	status := filepath.Join(t.TempDir(), "update-status.json")
	old := newAgent(t, d, status, 3, 3)
	if err := old.PrepareTrial(context.Background(), d.writeRoot(t, 2)); err != nil {
		// cmdline.txt boots 2: the client's /update/bootonly would have set 3.
		if httpCode(err) != http.StatusConflict || !strings.Contains(err.Error(), "bootonly") {
			t.Fatalf("PrepareTrial with root= naming the inactive partition: %v", err)
		}
	}
	f, _ := d.OpenBoot()
	if err := PointRootAt(f, 3); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := old.PrepareTrial(context.Background(), d.writeRoot(t, 2)); err != nil {
		t.Fatal(err)
	}

	if err := gokrazyPivot(d.boot); err != nil {
		t.Fatal(err)
	}
	trial := newAgent(t, d, status, 2, 3)
	trial.Start()
	trial.RunTrial(context.Background(), fast(Health{Targets: []Target{{Addr: closedPort(t)}}, StartTimeout: 200 * time.Millisecond}))
	select {
	case <-d.rebooted:
	case <-time.After(5 * time.Second):
		t.Fatal("no reboot after a failed check")
	}
	at := readAttempt(t, status)
	if at.State != Failed || !strings.Contains(at.Reason, "not healthy within") {
		t.Errorf("after the failed check: %+v", at)
	}
	if n, trial := d.nextBoot(t); n != 3 || trial {
		t.Errorf("next boot %d (trial %v), want the old 3", n, trial)
	}
	back := newAgent(t, d, status, 3, 3)
	back.Start()
	at = readAttempt(t, status)
	if at.State != RolledBack || !strings.Contains(at.Reason, "not healthy within") || at.Finished.IsZero() {
		t.Errorf("after the rollback: %+v", at)
	}
	if st := back.Status(); st.Last == nil || st.Last.State != RolledBack || st.Running != 3 || st.TrialBoot {
		t.Errorf("status after the rollback: %+v", st)
	}
}

func TestRolledBackWithoutTrial(t *testing.T) {
	for _, c := range []struct {
		state State
		want  string
	}{
		{Pending, "never reached its health check"},
		{Trial, "ended before Arka's health check finished"},
	} {
		d := newFileDevice(t)
		status := filepath.Join(t.TempDir(), "update-status.json")
		a := newAgent(t, d, status, 2, 2)
		a.save(&Attempt{Partition: 3, State: c.state})
		a.Start()
		if at := readAttempt(t, status); at.State != RolledBack || !strings.Contains(at.Reason, c.want) {
			t.Errorf("%s, then a boot of the old root: %+v", c.state, at)
		}
	}
}

func TestTrialDeadline(t *testing.T) {
	d := newFileDevice(t)
	status := filepath.Join(t.TempDir(), "update-status.json")
	a := newAgent(t, d, status, 3, 2)
	a.TrialDeadline = 100 * time.Millisecond
	a.Start() // and nothing else: the check never runs
	select {
	case <-d.rebooted:
	case <-time.After(5 * time.Second):
		t.Fatal("no reboot after the deadline")
	}
	if at := readAttempt(t, status); at.State != Failed || !strings.Contains(at.Reason, "did not finish within 100ms") {
		t.Errorf("%+v", at)
	}
}

func TestPrepareTrialChecksTheRoot(t *testing.T) {
	d := newFileDevice(t)
	status := filepath.Join(t.TempDir(), "update-status.json")
	a := newAgent(t, d, status, 2, 2)
	req := d.writeRoot(t, 3)
	req.RootSHA256 = strings.Repeat("0", 64)
	err := a.PrepareTrial(context.Background(), req)
	if httpCode(err) != http.StatusUnprocessableEntity || !strings.Contains(err.Error(), "nothing switched") {
		t.Errorf("wrong hash: %v", err)
	}
	if _, err := os.Stat(status); !os.IsNotExist(err) {
		t.Errorf("an attempt was recorded: %v", err)
	}
	if n, trial := d.nextBoot(t); n != 2 || trial {
		t.Errorf("next boot %d (trial %v) after a refused request", n, trial)
	}
	if err := a.PrepareTrial(context.Background(), TestbootRequest{RootSHA256: "xyz", RootSize: 1}); httpCode(err) != http.StatusBadRequest {
		t.Errorf("bad request: %v", err)
	}
}

// TestTrialGuards registers the agent next to handlers registered the way
// gokrazy does (method-less patterns): on a trial boot the agent's
// method-specific patterns win for the writes, and nothing panics.
func TestTrialGuards(t *testing.T) {
	for _, trialBoot := range []bool{false, true} {
		mux := http.NewServeMux()
		d := newFileDevice(t)
		a := newAgent(t, d, filepath.Join(t.TempDir(), "s.json"), 3, 3)
		if trialBoot {
			a.KernelRoot = 2
		}
		a.Register(mux)
		for _, p := range []string{"/update/root", "/update/boot", "/update/bootonly", "/update/mbr", "/update/switch", "/update/testboot", "/reboot", "/"} {
			mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "gokrazy") })
		}
		for _, c := range []struct{ method, path string }{{"PUT", "/update/root"}, {"PUT", "/update/bootonly"}, {"POST", "/update/switch"}, {"POST", "/update/testboot"}, {"POST", "/reboot"}} {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
			guarded := trialBoot && c.path != "/reboot"
			if guarded && (rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "trial boot")) {
				t.Errorf("trial boot: %s %s: %d %q", c.method, c.path, rec.Code, rec.Body)
			}
			if !guarded && rec.Body.String() != "gokrazy" {
				t.Errorf("trial boot %v: %s %s did not reach gokrazy: %d %q", trialBoot, c.method, c.path, rec.Code, rec.Body)
			}
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "/arka/update", nil))
		var st Status
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.TrialBoot != trialBoot || st.Running != 3 || st.NextBoot != 2 {
			t.Errorf("GET /arka/update: %v %+v", err, st)
		}
	}
}

// TestPreflight: the checks before anything is written, each refusal one
// line and nothing left behind.
func TestPreflight(t *testing.T) {
	d := newFileDevice(t)
	dir := t.TempDir()
	a := newAgent(t, d, filepath.Join(dir, "arka", "update-status.json"), 2, 2)
	a.Build.Board, a.Perm, a.PermOnRootOK = "amd64", dir, true
	if err := a.Preflight(PreflightRequest{To: Build{Board: "amd64"}, RootSize: 1 << 20}); err != nil {
		t.Fatalf("healthy /perm: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "arka")); len(ents) != 0 {
		t.Errorf("preflight left files: %v", ents)
	}
	a.PermOnRootOK = false
	for name, c := range map[string]struct {
		a    func(*Agent)
		want string
	}{
		"board":       {func(*Agent) {}, "the image is for board rpi, this device runs a amd64 image"},
		"not mounted": {func(a *Agent) { a.Build.Board = "" }, "is not mounted"},
		"missing":     {func(a *Agent) { a.Build.Board, a.Perm = "", filepath.Join(dir, "nope") }, "no such file"},
		"trial":       {func(a *Agent) { a.Running = 3 }, "trial boot"},
	} {
		b := newAgent(t, d, a.StatusFile, 2, 2)
		b.Build.Board, b.Perm = "amd64", dir
		c.a(b)
		err := b.Preflight(PreflightRequest{To: Build{Board: "rpi"}, RootSize: 1 << 20})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", name, err, c.want)
		}
	}
}

// TestProbationRollsBack: a build confirmed by its trial that then
// crash-loops within its probation is rolled back by the device: root=
// names the old partition again, the attempt says why, with the evidence.
func TestProbationRollsBack(t *testing.T) {
	probationPoll = 20 * time.Millisecond
	defer func() { probationPoll = 2 * time.Second }()
	d := newFileDevice(t)
	status := filepath.Join(t.TempDir(), "update-status.json")
	old := newAgent(t, d, status, 2, 2)
	req := d.writeRoot(t, 3)
	req.ProbationSeconds = 60
	if err := old.PrepareTrial(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if err := gokrazyPivot(d.boot); err != nil {
		t.Fatal(err)
	}
	trial := newAgent(t, d, status, 3, 2)
	var loops atomic.Int32
	trial.CrashLoop = func() (string, *Evidence) {
		if loops.Add(1) < 5 {
			return "", nil
		}
		return "Arka exited 3 times in a row", &Evidence{Starts: 4, LastExit: &supervise.Exit{Status: "exit status 2", Code: 2, Tail: []string{"panic: boom"}}}
	}
	trial.Start()
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer up.Close()
	done := make(chan struct{})
	go func() {
		trial.RunTrial(context.Background(), fast(Health{Targets: []Target{{Addr: up.Listener.Addr().String()}}}))
		close(done)
	}()
	select {
	case <-d.rebooted:
	case <-time.After(10 * time.Second):
		t.Fatal("no reboot after a crash loop on probation")
	}
	<-done
	at := readAttempt(t, status)
	if at.State != RolledBack || !strings.Contains(at.Reason, "on probation: Arka exited 3 times") || at.Evidence == nil || at.Evidence.LastExit.Tail[0] != "panic: boom" || at.HealthySeconds <= 0 {
		t.Errorf("attempt %+v", at)
	}
	if n, trial := d.nextBoot(t); n != 2 || trial {
		t.Errorf("next boot %d (trial %v), want 2", n, trial)
	}
	// The old build boots and keeps the record; a rollback on request
	// does not return to the faulty build.
	back := newAgent(t, d, status, 2, 2)
	back.Start()
	if st := back.Status(); st.Last.State != RolledBack || !st.Last.Faulty || st.Last.OnRequest() || st.Other == nil || st.Other.Version != "on-3" {
		t.Errorf("status after the rollback: %+v", st)
	}
	if err := back.Rollback(); httpCode(err) != http.StatusConflict || !strings.Contains(err.Error(), "which failed on this device") {
		t.Errorf("rollback to the faulty build: %v", err)
	}
}

// TestRollbackOnRequest: rollback returns to the other partition and the
// status says so on the next boot; a second rollback returns again.
func TestRollbackOnRequest(t *testing.T) {
	d := newFileDevice(t)
	status := filepath.Join(t.TempDir(), "update-status.json")
	a := newAgent(t, d, status, 2, 2)
	a.Start()
	if err := a.Rollback(); err != nil {
		t.Fatal(err)
	}
	<-d.rebooted
	if n, trial := d.nextBoot(t); n != 3 || trial {
		t.Fatalf("next boot %d (trial %v), want 3", n, trial)
	}
	b := newAgent(t, d, status, 3, 3)
	b.Start()
	st := b.Status()
	if st.Running != 3 || st.NextBoot != 3 || st.Last == nil || st.Last.State != Confirmed || st.Last.Partition != 3 ||
		st.Last.Reason != "switched to on request" || st.Other == nil || st.Other.Version != "on-2" {
		t.Errorf("after the rollback: %+v %+v", st, st.Last)
	}
	if err := b.Rollback(); err != nil { // (its reboot: d.rebooted is closed already)
		t.Fatal(err)
	}
	c := newAgent(t, d, status, 2, 2)
	c.Start()
	if st := c.Status(); st.Running != 2 || st.NextBoot != 2 || st.Last.State != RolledBack || st.Last.Reason != "rollback on request" {
		t.Errorf("after the second rollback: %+v %+v", st, st.Last)
	}
	if err := c.Rollback(); err != nil {
		t.Fatal(err)
	}
}
