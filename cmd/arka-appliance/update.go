package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/arkaweb/arka/appliance/build/updater"
	"github.com/arkaweb/arka/appliance/device/ota"
	"github.com/arkaweb/arka/appliance/settings"
)

// cmdUpdate sends an image to a running appliance (appliance/build/updater).
func cmdUpdate(args []string) error {
	fs := flag.NewFlagSet("update", flag.ExitOnError)
	host := fs.String("host", "", "the device: host name or address, optionally with the web UI port (host:8080)")
	img := fs.String("image", "", "image to send (default: build it, with --board)")
	uiPort := fs.Int("ui-port", 8443, "port of the device's HTTPS API when --host has none (8080 with http://)")
	checkURL := fs.String("check-url", "", `URL of Arka on the device that must answer 2xx or 3xx after the update (default http://HOST/; "-" skips)`)
	maxRate := fs.String("max-rate", "0", "send at most this many bytes per second (e.g. 2M; 0: no limit)")
	timeout := fs.Duration("timeout", 10*time.Minute, "bound from the reboot to the device's verdict")
	startTimeout := fs.Duration("start-timeout", 0, "how long the trial boot waits for Arka to be ready and healthy (0: the device's default, 2m)")
	probation := fs.Duration("probation", ota.DefaultProbation, "after the verdict, how long the device still returns to the old build by itself if Arka crash-loops (0: no probation)")
	name := fs.String("name", "", "the device's name, whose password to use (default: from --host)")
	yes := fs.Bool("yes", false, "at the first HTTPS connection to a device, pin whatever key answers without asking (trust on first use)")
	fingerprint := fs.String("fingerprint", "", "at the first HTTPS connection to a device, pin its key only if it is this one (SHA256:HEX, as the device logs it at boot); off a terminal an unpinned device needs this or --yes")
	var b buildFlags
	b.register(fs)
	// On a running device the settings flags change only their own
	// settings (settings.Choose merges them into the device's file at
	// boot); --settings replaces the whole file.
	fs.Lookup("settings").Usage = "settings file that replaces the device's whole " + settings.FileName + " (its Wi-Fi networks and addresses too; the settings flags change it). Without it, each settings flag (--hostname, --timezone, --wifi-*, --ipv4, --ipv6, --dns) changes only its own setting and the device keeps its others"
	fs.Parse(args)
	if fs.NArg() > 0 {
		return fmt.Errorf("update: unexpected argument %q", fs.Arg(0))
	}
	if *host == "" {
		return errors.New("update: --host is required (the device's name or address)")
	}
	if (*img == "") == (b.board == "") {
		return errors.New("update: give --image IMG or --board BOARD (to build first)")
	}
	rate := int64(0)
	if *maxRate != "0" {
		n, err := parseSize(*maxRate)
		if err != nil {
			return fmt.Errorf("update: --max-rate: %v", err)
		}
		rate = n
	}
	// The device is resolved first: its name (--name, else from --host)
	// picks the password that authenticates this update, and a build for
	// it carries that same password and, unless --hostname says
	// otherwise, that same hostname (the device keeps its settings).
	dev, err := (&deviceFlags{host: *host, name: *name, pwFile: b.pwFile, uiPort: *uiPort, yes: *yes, fingerprint: *fingerprint}).device()
	if err != nil {
		return fmt.Errorf("update: %v", err)
	}
	if *img == "" {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["hostname"] {
			if dev.name == "" {
				return fmt.Errorf("update: %s is an address: give the device's name (--name NAME) or --hostname so that the new build keeps its hostname", *host)
			}
			b.hostname = dev.name
		}
		b.pwFile = dev.pwFile
		sum, err := b.build()
		if err != nil {
			return err
		}
		*img = sum.Output
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bar := newBar(os.Stderr)
	bar.lines = true
	start := time.Now()
	res, err := updater.Update(ctx, updater.Options{
		Image: *img, Host: dev.bare, BaseURL: dev.base, Client: dev.http,
		Password: dev.pw, PasswordFile: dev.pwFile,
		CheckURL: *checkURL, MaxRate: rate, Timeout: *timeout, Probation: probationOption(*probation), StartTimeout: *startTimeout,
		Progress: bar,
	})
	if err != nil {
		var rb *updater.RolledBackError
		if errors.As(err, &rb) && rb.Device.Last != nil {
			printEvidence(os.Stderr, rb.Device.Last.Evidence)
			if rb.Device.Last.Boot != "" {
				fmt.Fprintf(os.Stderr, "Boot files %s\n", rb.Device.Last.Boot)
			}
		}
		return err
	}
	if res.UpToDate {
		fmt.Printf("The device already runs this build: Arka %s (build %s, sbom %.12s). Nothing sent.\n", res.To.Version, res.To.BuildTimestamp, res.To.SBOMHash)
		return nil
	}
	fmt.Printf("\nUpdated %s from Arka %s (sbom %.12s) to Arka %s (build %s, sbom %.12s), now on root partition %d.\n",
		*host, res.From.Version, res.From.SBOMHash, res.To.Version, res.To.BuildTimestamp, res.To.SBOMHash, res.Device.Running)
	if at := res.Device.Last; at != nil && len(at.Checked) > 0 {
		fmt.Printf("Verdict: Arka reported itself ready and these answered 2xx/3xx: %s.\n", strings.Join(at.Checked, ", "))
		if !at.ProbationEnds.IsZero() {
			fmt.Printf("Probation: until %s the device returns to Arka %s by itself if Arka crash-loops (or run \"arka-appliance rollback\").\n", at.ProbationEnds.Format(time.RFC3339), res.From.Version)
		}
	}
	fmt.Printf("Sent root %.1f MiB and boot %.1f MiB in %s; reboot to confirmed %s (Arka answered %s after it was started, then stayed up); total %s.\n",
		float64(res.RootBytes)/(1<<20), float64(res.BootBytes)/(1<<20), res.Transfer.Round(100*time.Millisecond),
		res.RebootToOK.Round(100*time.Millisecond), res.HealthyTook.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
	return nil
}

// cmdStatus prints a device's update state (GET /arka/update): which build
// runs from which root partition, what the next boot runs, and what became
// of the last update.
func cmdStatus(args []string) error {
	fs := flag.NewFlagSet("status", flag.ExitOnError)
	var d deviceFlags
	d.register(fs)
	fs.Parse(args)
	dev, err := d.device()
	if err != nil {
		return fmt.Errorf("status: %v", err)
	}
	st, err := updater.DeviceStatus(context.Background(), updater.Options{Host: dev.bare, BaseURL: dev.base, Client: dev.http, Password: dev.pw, PasswordFile: dev.pwFile})
	if err != nil {
		return err
	}
	fmt.Printf("Running    Arka %s (board %s, build %s, sbom %.12s) from root partition %d\n", st.Build.Version, st.Build.Board, st.Build.BuildTimestamp, st.Build.SBOMHash, st.Running)
	if st.TrialBoot {
		fmt.Printf("           a trial boot (the kernel's root= names partition %d): reboot before the next update\n", st.KernelRoot)
	}
	next := fmt.Sprintf("root partition %d", st.NextBoot)
	if st.NextIsTrial {
		next += " on trial"
	}
	fmt.Printf("Next boot  %s\n", next)
	if st.Other != nil {
		fmt.Printf("Other root partition %d holds Arka %s (build %s, sbom %.12s)\n", 5-st.Running, st.Other.Version, st.Other.BuildTimestamp, st.Other.SBOMHash)
	} else {
		fmt.Printf("Other root partition %d holds no build\n", 5-st.Running)
	}
	if b := st.Boot; b != nil {
		fmt.Printf("Boot files Arka %s's (sbom %.12s): the next boot starts its kernel", b.Build.Version, b.Build.SBOMHash)
		if b.Build.SBOMHash != "" && b.Build.SBOMHash != st.Build.SBOMHash && !st.TrialBoot {
			fmt.Printf(" (not the running build's)")
		}
		fmt.Println()
	}
	for _, k := range st.Kept {
		fmt.Printf("           kept on /perm for root partition %d: Arka %s's (%.1f MiB)\n", k.Partition, k.Build.Version, float64(k.Bytes)/(1<<20))
	}
	printLast(os.Stdout, st.Last)
	if a := st.Arka; a != nil {
		fmt.Printf("Arka       started %d time(s) this boot", a.Starts)
		if a.PID != 0 {
			fmt.Printf(", running (pid %d)", a.PID)
		} else if !a.NextStart.IsZero() {
			fmt.Printf(", restarting at %s", a.NextStart.Format(time.RFC3339))
		}
		fmt.Println()
		if ex := a.LastExit; ex != nil {
			fmt.Printf("           last exit %s at %s (%d in a row)\n", ex, ex.Time.Format(time.RFC3339), a.InARow)
		}
	}
	return nil
}

// printLast prints what became of the last update attempt (nil: none): a
// rollback on request as what it is, the build it returned to; otherwise
// the attempt's state and why.
func printLast(w io.Writer, at *ota.Attempt) {
	if at == nil {
		fmt.Fprintln(w, "Last update  none recorded")
		return
	}
	fmt.Fprintf(w, "Last update  %s -> %s (partition %d)", at.From.Version, at.To.Version, at.Partition)
	if at.OnRequest() {
		fmt.Fprintf(w, ", then rolled back on request to Arka %s", at.From.Version)
	} else {
		fmt.Fprintf(w, ": %s", at.State)
	}
	if !at.Finished.IsZero() {
		fmt.Fprintf(w, " at %s", at.Finished.Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	if at.Reason != "" && !at.OnRequest() {
		fmt.Fprintf(w, "           %s\n", at.Reason)
	}
	if at.Boot != "" {
		fmt.Fprintf(w, "           %s\n", at.Boot)
	}
	if at.State == ota.Confirmed && !at.ProbationEnds.IsZero() && time.Until(at.ProbationEnds) > 0 {
		fmt.Fprintf(w, "           on probation until %s: a crash loop returns to Arka %s\n", at.ProbationEnds.Format(time.RFC3339), at.From.Version)
	}
	printEvidence(w, at.Evidence)
}

// printEvidence prints what a failed trial saw of Arka.
func printEvidence(w io.Writer, ev *ota.Evidence) {
	if ev == nil {
		return
	}
	fmt.Fprintf(w, "Evidence   Arka was started %d time(s) during the trial boot\n", ev.Starts)
	for _, p := range ev.Problems {
		fmt.Fprintf(w, "           problem: %s\n", p)
	}
	if ex := ev.LastExit; ex != nil {
		fmt.Fprintf(w, "           its last process ended: %s; its last lines:\n", ex)
		for _, l := range ex.Tail {
			fmt.Fprintf(w, "             | %s\n", l)
		}
	}
}

func probationOption(d time.Duration) time.Duration {
	if d == 0 {
		return -1 // none
	}
	return d
}

// cmdRollback returns a device to the build on its other root partition.
func cmdRollback(args []string) error {
	fs := flag.NewFlagSet("rollback", flag.ExitOnError)
	var d deviceFlags
	d.register(fs)
	timeout := fs.Duration("timeout", 5*time.Minute, "bound on the reboot")
	fs.Parse(args)
	dev, err := d.device()
	if err != nil {
		return fmt.Errorf("rollback: %v", err)
	}
	bar := newBar(os.Stderr)
	bar.lines = true
	st, err := updater.Rollback(context.Background(), updater.Options{Host: dev.bare, BaseURL: dev.base, Client: dev.http,
		Password: dev.pw, PasswordFile: dev.pwFile, Timeout: *timeout, Progress: bar})
	if err != nil {
		return err
	}
	fmt.Printf("%s runs Arka %s (build %s, sbom %.12s) from root partition %d.\n", d.host, st.Build.Version, st.Build.BuildTimestamp, st.Build.SBOMHash, st.Running)
	if st.Other != nil {
		fmt.Printf("Root partition %d keeps Arka %s: \"arka-appliance rollback\" returns to it.\n", 5-st.Running, st.Other.Version)
	}
	return nil
}
