// Package updater sends a built Arka image to a running appliance over
// gokrazy's update API and sees it through Arka's safe-update protocol
// (package ota): root and boot file systems written and their hashes
// compared, a trial boot of the new root, and the device's own verdict:
// confirmed once Arka passed its health check on the new root, or rolled
// back to the old build.
package updater

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/arkaweb/arka/appliance/build/image"
	"github.com/arkaweb/arka/appliance/device/ota"
)

// Options describe one update.
type Options struct {
	Image        string // built image file (images/out/arka-BOARD.img)
	Host         string // the device: host or host:port of gokrazy's web UI
	UIPort       int    // port when Host has none; default 8080
	Password     string // gokrazy's web UI password
	PasswordFile string // where Password came from (for messages)
	// CheckURL must answer 2xx or 3xx once the device has confirmed the
	// update; default http://<host>/. "-" skips this check.
	CheckURL string
	MaxRate  int64         // bytes per second while sending; 0: no limit
	Timeout  time.Duration // bound from the reboot to the device's verdict; default 10 minutes
	// Probation is how long after confirmation the device still returns
	// to the old build by itself if Arka crash-loops; 0 is
	// ota.DefaultProbation, negative none.
	Probation time.Duration
	// StartTimeout bounds how long the trial waits for Arka to become
	// healthy; 0: the device's default (2 minutes).
	StartTimeout time.Duration
	Progress     Progress // may be nil

	// BaseURL, if set, is the API's URL instead of http://Host:UIPort
	// (https://arka.local:8443, see arka-appliance's --host), and Client
	// the HTTP client for it (one that pins the device's certificate).
	BaseURL string
	Client  *http.Client
}

// Progress receives the update's progress.
type Progress interface {
	Stage(n, of int, name string) // stage n starts
	Bytes(done, total int64)      // while sending
	Note(msg string)              // something worth a line
}

// Result describes a finished update.
type Result struct {
	From, To    ota.Build
	UpToDate    bool          // the device already ran this build; nothing was sent
	Transfer    time.Duration // sending root and boot, device-side checks
	RebootToOK  time.Duration // from the reboot request to the device's confirmation
	RootBytes   int64
	BootBytes   int64
	Device      ota.Status // the device's state at the end
	HealthyTook time.Duration
}

// Errors with a meaning of their own (test with errors.Is / errors.As).
var (
	ErrWrongPassword = errors.New("wrong password")
	ErrUnreachable   = errors.New("device unreachable")
	ErrHashMismatch  = errors.New("hash mismatch")
	ErrRefused       = errors.New("the device refused the update")
)

// RolledBackError says the new build did not pass on the device, which
// runs the old build again.
type RolledBackError struct {
	Reason string
	Device ota.Status
}

func (e *RolledBackError) Error() string {
	return fmt.Sprintf("the update was rolled back: %s; the device runs Arka %s again (root partition %d)", e.Reason, e.Device.Build.Version, e.Device.Running)
}

const stages = 5

type run struct {
	o      Options
	base   string // http://host:port
	host   string
	client *http.Client
	img    *image.Sections
	start  time.Time
}

func newRun(o Options) *run {
	if o.UIPort == 0 {
		o.UIPort = 8080
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	r := &run{o: o, client: &http.Client{}, start: time.Now()}
	r.host = o.Host
	hostport := o.Host
	if h, _, err := net.SplitHostPort(o.Host); err == nil {
		r.host = h
	} else {
		hostport = net.JoinHostPort(o.Host, fmt.Sprint(o.UIPort))
	}
	r.base = "http://" + hostport
	if o.BaseURL != "" {
		r.base = strings.TrimSuffix(o.BaseURL, "/")
	}
	if o.Client != nil {
		r.client = o.Client
	}
	if o.CheckURL == "" {
		h := r.host
		if strings.Contains(h, ":") {
			h = "[" + h + "]"
		}
		r.o.CheckURL = "http://" + h + "/"
	}
	return r
}

// DeviceStatus returns the device's update state (GET /arka/update): the
// running build and partition, the next boot, the last attempt. Only Host,
// UIPort, Password and PasswordFile of o are used.
func DeviceStatus(ctx context.Context, o Options) (*ota.Status, error) {
	return newRun(o).status(ctx, 10*time.Second)
}

// Update sends o.Image to the device and waits for its verdict.
func Update(ctx context.Context, o Options) (*Result, error) {
	r := newRun(o)
	o = r.o
	f, err := os.Open(o.Image)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r.img, err = image.OpenSections(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", o.Image, err)
	}
	to := ota.Build(r.img.Build)
	res := &Result{To: to, RootBytes: r.img.Root.Size(), BootBytes: r.img.Boot.Size()}

	st, err := r.status(ctx, 10*time.Second)
	if err != nil {
		return nil, err
	}
	res.From = st.Build
	if st.Build.Board != "" && to.Board != "" && st.Build.Board != to.Board {
		return nil, fmt.Errorf("the image is for board %s, the device runs a %s image: not updating", to.Board, st.Build.Board)
	}
	if st.Build.SBOMHash == to.SBOMHash && !st.TrialBoot {
		res.UpToDate, res.Device = true, *st
		return res, nil
	}
	if st.TrialBoot {
		if st, err = r.leaveTrialBoot(ctx, st); err != nil {
			return nil, err
		}
		if st.Build.SBOMHash == to.SBOMHash {
			res.UpToDate, res.Device = true, *st
			return res, nil
		}
	}

	// Preflight: the device checks /perm and the board before anything
	// is written.
	body, _ := json.Marshal(ota.PreflightRequest{To: to, RootSize: res.RootBytes})
	code, msg, err := r.request(ctx, "POST", "/arka/update/preflight", strings.NewReader(string(body)), int64(len(body)),
		map[string]string{"Content-Type": "application/json"}, time.Minute)
	switch {
	case err != nil:
		return nil, err
	case code == http.StatusNotFound:
		r.note("the device's update agent predates preflight checks; sending without them")
	case code != http.StatusOK:
		return nil, fmt.Errorf("%w: %s", ErrRefused, oneLine(string(msg)))
	}

	t0 := time.Now()
	r.stage(1, fmt.Sprintf("sending the root file system (%.1f MiB) to root partition %d", mib(res.RootBytes), 5-st.Running))
	rootSum, err := r.put(ctx, "/update/root", r.img.Root)
	if err != nil {
		return nil, fmt.Errorf("sending the root file system: %w (nothing switched: the device keeps running Arka %s)", err, st.Build.Version)
	}
	r.stage(2, fmt.Sprintf("sending the boot file system (%.1f MiB)", mib(res.BootBytes)))
	var bootErr error
	for try := 1; try <= 3; try++ {
		if _, bootErr = r.put(ctx, "/update/bootonly", r.img.Boot); bootErr == nil || ctx.Err() != nil {
			break
		}
		r.note(fmt.Sprintf("boot file system: %v; sending it again", bootErr))
	}
	if bootErr != nil {
		return nil, fmt.Errorf("sending the boot file system: %w. Nothing switched, but the boot partition may be damaged: do not reboot the device; run the update again", bootErr)
	}
	r.stage(3, "checking the new root on the device and asking for a trial boot")
	body, _ = json.Marshal(ota.TestbootRequest{To: to, RootSHA256: rootSum, RootSize: res.RootBytes, ProbationSeconds: o.Probation.Seconds(), StartSeconds: o.StartTimeout.Seconds()})
	var prepared ota.Status
	if err := r.call(ctx, "POST", "/arka/update/testboot", body, &prepared, time.Minute); err != nil {
		return nil, fmt.Errorf("preparing the trial boot: %w (nothing switched)", err)
	}
	res.Transfer = time.Since(t0)

	r.stage(4, "rebooting into the new build on trial")
	t1 := time.Now()
	if err := r.reboot(ctx); err != nil {
		return nil, fmt.Errorf("asking the device to reboot: %w (it tries the new build at its next boot)", err)
	}
	r.stage(5, "waiting for the device's verdict (Arka's health check on the new build)")
	final, err := r.verdict(ctx, st.BootID, prepared.Last)
	if err != nil {
		return nil, err
	}
	res.RebootToOK = time.Since(t1)
	res.Device = *final
	if final.Last != nil {
		res.HealthyTook = time.Duration(final.Last.HealthySeconds * float64(time.Second))
	}
	if err := r.checkGokrazy(ctx, to); err != nil {
		return nil, err
	}
	if r.o.CheckURL != "-" {
		if err := r.checkArka(ctx); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func (r *run) stage(n int, name string) {
	if r.o.Progress != nil {
		r.o.Progress.Stage(n, stages, name)
	}
}

func (r *run) note(msg string) {
	if r.o.Progress != nil {
		r.o.Progress.Note(msg)
	}
}

// request sends one request to gokrazy's web UI and maps the answers every
// step shares: 401 (wrong password), connection errors (unreachable).
func (r *run) request(ctx context.Context, method, path string, body io.Reader, size int64, hdr map[string]string, timeout time.Duration) (int, []byte, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, body)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.ContentLength = size
	}
	req.SetBasicAuth("gokrazy", r.o.Password)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, r.netError(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, r.netError(err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		from := ""
		if r.o.PasswordFile != "" {
			from = " from " + r.o.PasswordFile
		}
		return 0, nil, fmt.Errorf("%w: the device at %s refused user gokrazy with the password%s", ErrWrongPassword, r.base, from)
	}
	return resp.StatusCode, b, nil
}

func (r *run) netError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%w: cannot reach %s: %v", ErrUnreachable, r.base, err)
	}
	return fmt.Errorf("%s: %v", r.base, err)
}

// call sends a request whose answer is JSON into out (nil: ignored).
func (r *run) call(ctx context.Context, method, path string, body []byte, out any, timeout time.Duration) error {
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	code, b, err := r.request(ctx, method, path, rd, int64(len(body)), map[string]string{"Accept": "application/json", "Content-Type": "application/json"}, timeout)
	if err != nil {
		return err
	}
	if code == http.StatusNotFound && strings.HasPrefix(path, "/arka/") {
		return fmt.Errorf("the device at %s has no Arka update agent (%s): it runs an image from before safe updates", r.base, path)
	}
	if code != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, path, code, oneLine(string(b)))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: %v", method, path, err)
		}
	}
	return nil
}

func (r *run) status(ctx context.Context, timeout time.Duration) (*ota.Status, error) {
	var st ota.Status
	if err := r.call(ctx, "GET", "/arka/update", nil, &st, timeout); err != nil {
		return nil, err
	}
	return &st, nil
}

// put streams a section to a gokrazy update endpoint and compares the
// SHA-256 the device computed over what it wrote with the local one.
func (r *run) put(ctx context.Context, path string, sec *io.SectionReader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(sec, 0, sec.Size())); err != nil {
		return "", err
	}
	want := hex.EncodeToString(h.Sum(nil))
	body := &meter{r: io.NewSectionReader(sec, 0, sec.Size()), total: sec.Size(), rate: r.o.MaxRate, p: r.o.Progress, start: time.Now()}
	code, b, err := r.request(ctx, "PUT", path, body, sec.Size(), map[string]string{"Content-Type": "application/octet-stream"}, 0)
	if err != nil {
		return "", err
	}
	if code == http.StatusConflict {
		return "", errors.New(oneLine(string(b)))
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("PUT %s: %d %s", path, code, oneLine(string(b)))
	}
	got := strings.TrimSpace(string(b))
	if !strings.EqualFold(got, want) {
		return "", fmt.Errorf("%w: the device wrote data with SHA-256 %s, the image has %s", ErrHashMismatch, got, want)
	}
	return want, nil
}

// reboot asks gokrazy to reboot; it stops Arka and the other programs
// first, which can take a while.
func (r *run) reboot(ctx context.Context) error {
	code, b, err := r.request(ctx, "POST", "/reboot", strings.NewReader("wait_per_signal=20s"), int64(len("wait_per_signal=20s")),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 2*time.Minute)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("POST /reboot: %d %s", code, oneLine(string(b)))
	}
	return nil
}

// leaveTrialBoot handles a device that still runs the trial boot of its
// last update: gokrazy's update endpoints are not safe until it reboots.
// A trial still being checked (or failed, and about to reboot) is waited
// for; a confirmed one is rebooted (into the same build, now the default).
func (r *run) leaveTrialBoot(ctx context.Context, st *ota.Status) (*ota.Status, error) {
	deadline := time.Now().Add(r.o.Timeout)
	for st.Last != nil && (st.Last.State == ota.Trial || st.Last.State == ota.Failed) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the device's last update is still on trial after %s", r.o.Timeout)
		}
		r.note("the device is still deciding on its last update (trial boot); waiting for its verdict")
		time.Sleep(2 * time.Second)
		next, err := r.status(ctx, 10*time.Second)
		if err != nil {
			continue
		}
		if next.BootID != st.BootID {
			return r.leaveTrialBoot(ctx, next) // it rolled back
		}
		st = next
	}
	if !st.TrialBoot {
		return st, nil
	}
	r.note(fmt.Sprintf("the device still runs the trial boot of its last update (Arka %s, root partition %d): rebooting it once before writing the other root partition", st.Build.Version, st.Running))
	if err := r.reboot(ctx); err != nil {
		return nil, err
	}
	next, err := r.waitBoot(ctx, st.BootID, deadline)
	if err != nil {
		return nil, err
	}
	if next.TrialBoot {
		return nil, fmt.Errorf("after a reboot the device still runs a trial boot (root partition %d, root= names %d)", next.Running, next.KernelRoot)
	}
	if next.Build.SBOMHash != st.Build.SBOMHash {
		r.note(fmt.Sprintf("after the reboot the device runs Arka %s (sbom %.12s) instead of %s", next.Build.Version, next.Build.SBOMHash, st.Build.Version))
	} else {
		r.note(fmt.Sprintf("rebooted: Arka %s on root partition %d, now a normal boot", next.Build.Version, next.Running))
	}
	return next, nil
}

// waitBoot polls until the device answers with another boot ID.
func (r *run) waitBoot(ctx context.Context, bootID string, deadline time.Time) (*ota.Status, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the device did not come back within %s", r.o.Timeout)
		}
		st, err := r.status(ctx, 3*time.Second)
		if errors.Is(err, ErrWrongPassword) {
			return nil, err
		}
		if err == nil && st.BootID != bootID {
			return st, nil
		}
		time.Sleep(time.Second)
	}
}

// verdict waits, after the reboot, until the device confirms the new root
// or runs the old one again.
func (r *run) verdict(ctx context.Context, oldBoot string, at *ota.Attempt) (*ota.Status, error) {
	if at == nil {
		return nil, errors.New("the device did not record the update attempt")
	}
	deadline := time.Now().Add(r.o.Timeout)
	said := map[string]bool{}
	say := func(k, msg string) {
		if !said[k] {
			said[k] = true
			r.note(msg)
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the device gave no verdict within %s of the reboot; if the new build hangs, the device comes back on the old one at its next reboot", r.o.Timeout)
		}
		st, err := r.status(ctx, 3*time.Second)
		if errors.Is(err, ErrWrongPassword) {
			return nil, fmt.Errorf("%w (after the reboot: the new build has another password)", err)
		}
		if err != nil || st.BootID == oldBoot || st.Last == nil {
			time.Sleep(time.Second)
			continue
		}
		last := st.Last
		switch {
		case st.Running == at.Partition && last.Partition == at.Partition && last.State == ota.Confirmed:
			say("ok", fmt.Sprintf("confirmed: Arka %s passed its health check (answered %.1f s after it was started) and is now the default", st.Build.Version, last.HealthySeconds))
			return st, nil
		case st.Running == at.Partition && last.State == ota.Trial:
			say("trial", fmt.Sprintf("the new build runs on trial (Arka %s, root partition %d); its init checks Arka's health", st.Build.Version, st.Running))
		case last.State == ota.Failed:
			say("failed", fmt.Sprintf("the new build failed its health check: %s; the device reboots into the old build", last.Reason))
		case st.Running != at.Partition && !st.TrialBoot:
			reason := last.Reason
			if last.Partition != at.Partition || (last.State != ota.RolledBack && last.State != ota.Failed) {
				reason = "the device booted the old build again without a record of the new one's trial"
			}
			say("back", fmt.Sprintf("the device runs the old build again (Arka %s, root partition %d)", st.Build.Version, st.Running))
			return nil, &RolledBackError{Reason: reason, Device: *st}
		}
		time.Sleep(time.Second)
	}
}

// checkGokrazy compares gokrazy's own report of the running build with the
// image's.
func (r *run) checkGokrazy(ctx context.Context, to ota.Build) error {
	code, b, err := r.request(ctx, "GET", "/", nil, 0, map[string]string{"Accept": "application/json"}, 10*time.Second)
	if err != nil {
		return err
	}
	var st struct{ BuildTimestamp, SBOMHash string }
	if code != http.StatusOK || json.Unmarshal(b, &st) != nil {
		return fmt.Errorf("gokrazy's status: %d %s", code, oneLine(string(b)))
	}
	if st.SBOMHash != to.SBOMHash {
		return fmt.Errorf("gokrazy reports SBOMHash %s, the image has %s", st.SBOMHash, to.SBOMHash)
	}
	return nil
}

// checkArka waits (up to a minute) until CheckURL answers.
func (r *run) checkArka(ctx context.Context) error {
	c := &http.Client{Timeout: 3 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	deadline := time.Now().Add(time.Minute)
	var last error
	for time.Now().Before(deadline) {
		req, err := http.NewRequestWithContext(ctx, "GET", r.o.CheckURL, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode >= 200 && resp.StatusCode < 400 {
				return nil
			}
			err = fmt.Errorf("it answered %s (want 2xx or 3xx)", resp.Status)
		}
		last = err
		time.Sleep(time.Second)
	}
	return fmt.Errorf("the device runs the new build and reports Arka healthy, but %s does not answer well: %v", r.o.CheckURL, last)
}

// meter reads the body of an upload, reports progress and keeps to a rate.
type meter struct {
	r     io.Reader
	done  int64
	total int64
	rate  int64
	p     Progress
	start time.Time
}

func (m *meter) Read(b []byte) (int, error) {
	if m.rate > 0 && len(b) > int(m.rate/10)+1 {
		b = b[:m.rate/10+1]
	}
	n, err := m.r.Read(b)
	m.done += int64(n)
	if m.rate > 0 {
		if ahead := time.Duration(float64(m.done)/float64(m.rate)*float64(time.Second)) - time.Since(m.start); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	if m.p != nil && n > 0 {
		m.p.Bytes(m.done, m.total)
	}
	return n, err
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// Rollback asks the device to return to the build on its other root
// partition (POST /arka/update/rollback) and waits until it runs it.
func Rollback(ctx context.Context, o Options) (*ota.Status, error) {
	r := newRun(o)
	st, err := r.status(ctx, 10*time.Second)
	if err != nil {
		return nil, err
	}
	code, b, err := r.request(ctx, "POST", "/arka/update/rollback", nil, 0, nil, time.Minute)
	switch {
	case err != nil:
		return nil, err
	case code == http.StatusNotFound:
		return nil, fmt.Errorf("the device at %s has no rollback (it runs an image from before it)", r.base)
	case code != http.StatusOK:
		return nil, fmt.Errorf("the device refused the rollback: %s", oneLine(string(b)))
	}
	r.note(fmt.Sprintf("the device reboots into root partition %d", 5-st.Running))
	next, err := r.waitBoot(ctx, st.BootID, time.Now().Add(r.o.Timeout))
	if err != nil {
		return nil, err
	}
	if next.Running == st.Running {
		return next, fmt.Errorf("after the reboot the device still runs root partition %d", next.Running)
	}
	return next, nil
}
