package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/arkaweb/arka/appliance/deploy"
)

// deviceFlags are the flags that reach a device's API: --host, --name,
// --password-file, --ui-port.
type deviceFlags struct {
	host, name, pwFile string
	uiPort             int
}

func (d *deviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.host, "host", "", "the device: its name (NAME or NAME.local) or address, optionally with the web UI port (host:8080)")
	fs.StringVar(&d.name, "name", "", "the device's name, whose password to use (default: from --host)")
	fs.StringVar(&d.pwFile, "password-file", "", "device password file (default: the device's, see images/README.md)")
	fs.IntVar(&d.uiPort, "ui-port", 8080, "port of gokrazy's web UI on the device (when --host has none)")
}

// client returns the base URL and password for the device.
func (d *deviceFlags) client() (*deploy.Client, string, error) {
	if d.host == "" {
		return nil, "", errors.New("--host is required (the device's name or address)")
	}
	pw, file, err := devicePassword(d.host, d.name, d.pwFile)
	if err != nil {
		return nil, "", err
	}
	hostport := d.host
	if _, _, err := net.SplitHostPort(d.host); err != nil {
		hostport = net.JoinHostPort(d.host, fmt.Sprint(d.uiPort))
	}
	return &deploy.Client{Base: "http://" + hostport, Password: pw, HTTP: &http.Client{}}, file, nil
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
	bar.Stage(2, 2, "checked and live")
	g := res.Generation
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
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
