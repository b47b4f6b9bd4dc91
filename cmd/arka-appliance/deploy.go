package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/arkaweb/arka/appliance/deploy"
	"github.com/arkaweb/arka/appliance/devices"
)

// deviceFlags are the flags that reach a device's API: --host, --name,
// --password-file, --ui-port.
type deviceFlags struct {
	host, name, pwFile string
	uiPort             int
	yes                bool
	fingerprint        string
}

func (d *deviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.host, "host", "", "the device: NAME, NAME.local or an address, optionally :PORT; https:// is the default, http://HOST:8080 reaches the plain-HTTP port (the password then crosses the network in clear text)")
	fs.StringVar(&d.name, "name", "", "the device's name, whose password and pinned certificate to use (default: from --host)")
	fs.StringVar(&d.pwFile, "password-file", "", "device password file (default: the device's, see images/README.md)")
	fs.IntVar(&d.uiPort, "ui-port", 8443, "port of the device's HTTPS API when --host has none (8080 with http://)")
	fs.BoolVar(&d.yes, "yes", false, "at the first HTTPS connection to a device, pin whatever key answers without asking (trust on first use; the fingerprint is printed)")
	fs.StringVar(&d.fingerprint, "fingerprint", "", "at the first HTTPS connection to a device, pin its key only if it is this one (SHA256:HEX, as the device logs it at boot: \"device key SHA256 …\"); off a terminal an unpinned device needs this or --yes")
}

// device is a resolved --host: where its API is, with which password and
// HTTP client (pinning its certificate over HTTPS).
type device struct {
	host   string // as given
	bare   string // host name or address, no port
	name   string // the device name (password, pin)
	base   string // https://host:port
	pw     string
	pwFile string
	http   *http.Client
}

func (d *deviceFlags) device() (*device, error) {
	if d.host == "" {
		return nil, errors.New("--host is required (the device's name or address)")
	}
	scheme, hostport := "https", d.host
	if u, err := url.Parse(d.host); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		scheme, hostport = u.Scheme, u.Host
	}
	bare := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		bare = h
	} else {
		port := d.uiPort
		if scheme == "http" && port == 8443 {
			port = 8080
		}
		hostport = net.JoinHostPort(hostport, fmt.Sprint(port))
	}
	name := d.name
	if name == "" {
		if n, err := devices.Name(bare); err == nil {
			name = n
		} else if d.pwFile == "" {
			return nil, err
		}
	}
	if local := lanName(bare, net.DefaultResolver.LookupHost); local != bare {
		_, port, _ := net.SplitHostPort(hostport)
		bare, hostport = local, net.JoinHostPort(local, port)
	}
	pw, file, err := devices.ReadPassword(name, d.pwFile)
	if err != nil {
		return nil, err
	}
	dev := &device{host: d.host, bare: bare, name: name, base: scheme + "://" + hostport, pw: pw, pwFile: file}
	if scheme == "http" {
		if ip, err := netip.ParseAddr(bare); (err != nil || !ip.IsLoopback()) && bare != "localhost" {
			fmt.Fprintf(os.Stderr, "warning: plain HTTP to %s: the device password crosses the network in clear text\n", hostport)
		}
		dev.http = &http.Client{}
		return dev, nil
	}
	pinKey := name
	if pinKey == "" {
		pinKey = strings.NewReplacer(":", "_", "%", "_").Replace(bare)
	}
	pinFile, err := devices.PinFile(pinKey)
	if err != nil {
		return nil, err
	}
	if err := d.firstUse(hostport, pinFile); err != nil {
		return nil, err
	}
	dev.http = devices.PinnedClient(pinKey, pinFile, func(fp string) {
		fmt.Fprintf(os.Stderr, "First HTTPS connection to %s: its key SHA256:%s is now pinned in %s\n", d.host, fp, pinFile)
	})
	return dev, nil
}

// lanName returns NAME.local for a bare device name (README's
// "--host garden") that the resolver does not know but mDNS does (the
// device answers for NAME.local); else host unchanged.
func lanName(host string, lookup func(context.Context, string) ([]string, error)) string {
	if host == "" || host == "localhost" || strings.Contains(host, ".") || strings.Contains(host, ":") {
		return host
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := lookup(ctx, host); err == nil {
		return host
	}
	if _, err := lookup(ctx, host+".local"); err == nil {
		return host + ".local"
	}
	return host
}

// requestTimeout bounds each request of deploy and password but site
// uploads (0: deploy.DefaultTimeout); tests shorten it.
var requestTimeout time.Duration

// firstUse decides, before the password can travel, how a device whose
// key is not pinned yet gets pinned: with --fingerprint, only if the key
// it presents is that one; with --yes, whatever answers (PinnedClient
// pins it and prints it); on a terminal, by asking (confirmFirstUse).
// Off a terminal it refuses, like SSH in batch mode: nothing is sent to a
// device nobody vouched for (QA A13).
func (d *deviceFlags) firstUse(hostport, pinFile string) error {
	if _, err := os.Stat(pinFile); !errors.Is(err, fs.ErrNotExist) {
		return nil // pinned (or unreadable: the pinned client says so)
	}
	if d.yes && d.fingerprint == "" {
		return nil
	}
	if d.fingerprint == "" && term.IsTerminal(int(os.Stdin.Fd())) {
		return confirmFirstUse(d.host, hostport, pinFile, os.Stdin, os.Stderr)
	}
	want := strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(d.fingerprint, "SHA256:"), "sha256:"))
	if b, err := hex.DecodeString(want); d.fingerprint != "" && (err != nil || len(b) != sha256.Size) {
		return fmt.Errorf("--fingerprint %q: want SHA256: and 64 hex digits, as the device logs it at boot (\"device key SHA256 …\")", d.fingerprint)
	}
	got, err := devices.ProbeFingerprint(hostport, 10*time.Second)
	if err != nil {
		return fmt.Errorf("cannot reach %s: %v", hostport, err)
	}
	if d.fingerprint == "" {
		return fmt.Errorf("no key is pinned for %s on this machine (%s) and there is no terminal to confirm one on: nothing was sent.\n"+
			"  It presents the key SHA256:%s. If the device logs that key at boot (\"device key SHA256 …\"), pin it with --fingerprint SHA256:%s\n"+
			"  (or run once on a terminal to confirm it; --yes trusts whichever key answers first)", d.host, pinFile, got, got)
	}
	if got != want {
		return fmt.Errorf("%s presents the key SHA256:%s, not the --fingerprint SHA256:%s: nothing was sent and nothing pinned (is this the device? something may be answering in its place)", d.host, got, want)
	}
	if err := devices.WriteFile(pinFile, []byte(got+"\n")); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "The key of %s is SHA256:%s as given: pinned in %s\n", d.host, got, pinFile)
	return nil
}

// confirmFirstUse asks, like SSH, before the first connection to a device
// pins its key: it shows the key's fingerprint (read without sending
// anything) and pins it only on "yes". A device already pinned is left to
// the pinned client.
func confirmFirstUse(host, hostport, pinFile string, in io.Reader, out io.Writer) error {
	if _, err := os.Stat(pinFile); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	fp, err := devices.ProbeFingerprint(hostport, 10*time.Second)
	if err != nil {
		return fmt.Errorf("%s: %v", hostport, err)
	}
	fmt.Fprintf(out, "First HTTPS connection to %s: nothing is known about it on this machine.\n", host)
	fmt.Fprintf(out, "Its key fingerprint is SHA256:%s\n", fp)
	fmt.Fprint(out, "(the device logs it at boot: \"device key SHA256 …\"). Pin it and send the password? Type yes to continue: ")
	line, _ := bufio.NewReader(in).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "yes" && a != "y" {
		return errors.New("not confirmed: nothing was sent and nothing pinned (--yes pins without asking)")
	}
	if err := devices.WriteFile(pinFile, []byte(fp+"\n")); err != nil {
		return err
	}
	fmt.Fprintf(out, "Pinned in %s\n", pinFile)
	return nil
}

// client returns the deploy API client for the device.
func (d *deviceFlags) client() (*deploy.Client, string, error) {
	dev, err := d.device()
	if err != nil {
		return nil, "", err
	}
	return &deploy.Client{Base: dev.base, Password: dev.pw, HTTP: dev.http, Timeout: requestTimeout}, dev.pwFile, nil
}

// cmdDeploy sends a site to a running device (appliance/deploy), or with
// --rollback returns it to the previous generation.
func cmdDeploy(args []string) error {
	fs := flag.NewFlagSet("deploy", flag.ExitOnError)
	var d deviceFlags
	d.register(fs)
	rollback := fs.Bool("rollback", false, "return the device to the previously deployed generation")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: arka-appliance deploy --host NAME DIR\n       arka-appliance deploy --host NAME --rollback\n\nDIR holds sites/*.toml and the content they point at (relative paths, e.g. root = \"../www\").")
		fs.PrintDefaults()
	}
	fs.Parse(args)
	c, pwFile, err := d.client()
	if err != nil {
		return fmt.Errorf("deploy: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	wrap := func(err error) error {
		if errors.Is(err, deploy.ErrWrongPassword) {
			return fmt.Errorf("deploy: %s refused the password in %s: the device was built with another one (copy its file from the machine that built its image)", d.host, pwFile)
		}
		var re *deploy.RefusedError
		if errors.As(err, &re) {
			return err
		}
		return fmt.Errorf("deploy: %s: %v", d.host, err)
	}
	if *rollback {
		if fs.NArg() > 0 {
			return errors.New("deploy: --rollback takes no directory")
		}
		res, err := c.Rollback(ctx)
		if err != nil {
			return wrap(err)
		}
		fmt.Printf("%s: %s (deployed %s from %s).\n", d.host, res.Message, res.Generation.Deployed.Local().Format(time.DateTime), res.Generation.From)
		return nil
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("deploy: give one site directory")
	}
	dir := fs.Arg(0)
	start := time.Now()
	files, err := deploy.Scan(dir)
	if err != nil {
		return fmt.Errorf("deploy: %v", err)
	}
	st, err := c.State(ctx)
	if err != nil {
		return wrap(err)
	}
	plan := deploy.NewPlan(files, st)
	cur := "the site baked into its image"
	if st.Current != nil {
		cur = fmt.Sprintf("generation %d", st.Current.ID)
	}
	fmt.Fprintf(os.Stderr, "%s: %d files, %s; %s serves %s: sending %d changed files, %s\n",
		dir, len(files), mib(plan.Total), d.host, cur, len(plan.Send), mib(plan.SendBytes))
	bar := newBar(os.Stderr)
	bar.Stage(1, 2, "sending")
	progress := func(done, total int64) { bar.Bytes(done, total) }
	res, err := c.Deploy(ctx, dir, whoAmI(), plan, progress)
	if err != nil {
		var re *deploy.RefusedError
		if errors.As(err, &re) {
			fmt.Fprintf(os.Stderr, "\n%s refused the site (it still serves %s):\n", d.host, cur)
			for _, e := range re.Errors {
				fmt.Fprintln(os.Stderr, inDir(dir, e))
			}
			return errors.New("deploy: nothing changed")
		}
		return wrap(err)
	}
	g := res.Generation
	if res.NotServed != "" {
		bar.Stage(2, 2, "checked")
		fmt.Printf("Generation %d is current on %s: %d files, %s (%s sent) in %s, not served yet: %s. Arka serves it when it starts; the previous one stays for `deploy --rollback`.\n",
			g.ID, d.host, g.Files, mib(g.Bytes), mib(g.Sent), time.Since(start).Round(100*time.Millisecond), res.NotServed)
		return nil
	}
	bar.Stage(2, 2, "checked and live")
	fmt.Printf("Generation %d is live on %s: %d files, %s (%s sent) in %s. The previous one stays for `deploy --rollback`.\n",
		g.ID, d.host, g.Files, mib(g.Bytes), mib(g.Sent), time.Since(start).Round(100*time.Millisecond))
	return nil
}

var mistakePath = regexp.MustCompile(`^[^:\s]+:\d+`)

// inDir puts the site directory in front of a mistake's relative path, so
// that "sites/a.toml:3:5: …" names the file on this machine.
func inDir(dir, mistake string) string {
	if mistakePath.MatchString(mistake) && !filepath.IsAbs(mistake) {
		return filepath.Clean(dir) + string(filepath.Separator) + mistake
	}
	return mistake
}

func whoAmI() string {
	h, _ := os.Hostname()
	if u, err := user.Current(); err == nil {
		return u.Username + "@" + h
	}
	return h
}

func mib(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
