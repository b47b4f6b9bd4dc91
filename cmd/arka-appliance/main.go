// Command arka-appliance builds Arka appliance images, writes them to SD
// cards and disks, and boots them under QEMU:
//
//	arka-appliance build --board rpi|amd64 [-o images/out/arka-<board>.img]
//	arka-appliance flash --image images/out/arka-rpi.img /dev/sdX   (or --board rpi: build first)
//	arka-appliance vm    --board amd64 [--image …]
//	arka-appliance update --host HOST (--image IMG | --board BOARD)   (over the air, rolls back by itself)
//	arka-appliance status --host HOST                                 (the device's last update)
//	arka-appliance deploy --host HOST DIR | --rollback                (a site over the network)
//	arka-appliance password --host HOST                               (rotate the device password)
//	arka-appliance rollback --host HOST                               (return to the other root partition)
//	arka-appliance settings check FILE                                (a hand-edited settings.txt, as the device checks it)
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/arkaweb/arka/appliance/build/flash"
	"github.com/arkaweb/arka/appliance/build/image"
	"github.com/arkaweb/arka/appliance/build/phpimage"
	"github.com/arkaweb/arka/appliance/build/vm"
	"github.com/arkaweb/arka/appliance/devices"
	"github.com/arkaweb/arka/appliance/partition"
)

const usage = `usage:
  arka-appliance build --board BOARD [flags]     build images/out/arka-BOARD.img
  arka-appliance flash (--image IMG[.xz|.gz] | --board BOARD) [--yes] [--force] [--create] DEVICE
  arka-appliance vm    --board amd64 [--image IMG] [--disk-size 4G]
  arka-appliance update --host HOST[:PORT] (--image IMG | --board BOARD) [flags]
  arka-appliance status --host HOST[:PORT] [--name NAME | --password-file FILE]
  arka-appliance deploy --host NAME DIR          send a site (sites/*.toml + content) to a device
  arka-appliance deploy --host NAME --rollback   back to the previously deployed site
  arka-appliance password --host NAME            give the device a new password
  arka-appliance rollback --host HOST[:PORT] [--name NAME | --password-file FILE]
  arka-appliance settings check FILE             check a settings.txt as the device does at boot

boards: %s
run "arka-appliance COMMAND -h" for the flags of a command.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintf(os.Stderr, usage, strings.Join(image.Boards(), ", "))
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		_, err = cmdBuild(os.Args[2:])
	case "flash":
		err = cmdFlash(os.Args[2:])
	case "vm":
		err = cmdVM(os.Args[2:])
	case "update":
		err = cmdUpdate(os.Args[2:])
	case "status":
		err = cmdStatus(os.Args[2:])
	case "rollback":
		err = cmdRollback(os.Args[2:])
	case "deploy":
		err = cmdDeploy(os.Args[2:])
	case "password":
		err = cmdPassword(os.Args[2:])
	case "settings":
		err = cmdSettings(os.Args[2:], os.Stdout)
	case "-h", "--help", "help":
		fmt.Printf(usage, strings.Join(image.Boards(), ", "))
		return
	default:
		fmt.Fprintf(os.Stderr, usage, strings.Join(image.Boards(), ", "))
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "arka-appliance:", err)
		os.Exit(1)
	}
}

// buildImage builds an image (a variable so that tests can see what a
// command would build without building it).
var buildImage = image.Build

// buildFlags registers the image build flags on fs.
type buildFlags struct {
	board, out, hostname, arkaPkg, version, pwFile, size, extraArgs, tz string
	httpPort, httpsPort                                                 int
	php, zero2wWiFi                                                     bool
	phpExt, debCache                                                    string
	site                                                                string
	settings                                                            settingsFlags
	fs                                                                  *flag.FlagSet
}

func (b *buildFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.board, "board", "", "board: "+strings.Join(image.Boards(), ", "))
	fs.StringVar(&b.out, "o", "", "output image (default images/out/arka-BOARD.img)")
	fs.StringVar(&b.hostname, "hostname", "arka", "hostname (partition GUIDs derive from it)")
	fs.StringVar(&b.arkaPkg, "arka-pkg", "./cmd/arka", "Go package built as /user/arka")
	fs.StringVar(&b.version, "version", "", "Arka version recorded in the image (default: as make's VERSION, git describe --tags --always --dirty of the source tree; dev outside a git checkout)")
	fs.StringVar(&b.pwFile, "password-file", "", "device password file (gokrazy UI, updates, deploys): reused if present, else generated (default: the device's file in the user's configuration directory, see images/README.md)")
	fs.StringVar(&b.size, "size", "1200M", "image size")
	fs.StringVar(&b.extraArgs, "kernel-args", "", "extra kernel command line arguments")
	fs.StringVar(&b.tz, "timezone", "UTC", "time zone for /etc/localtime")
	fs.IntVar(&b.httpPort, "ui-http-port", 8080, "port of gokrazy's web UI and update API (Arka owns 80)")
	fs.IntVar(&b.httpsPort, "ui-https-port", 8443, "HTTPS port of gokrazy's web UI (Arka owns 443)")
	fs.BoolVar(&b.php, "php", false, "include php-fpm from Debian's packages (see images/README.md)")
	fs.StringVar(&b.phpExt, "php-extensions", strings.Join(phpimage.DefaultExtensions, ","), "PHP extensions to include, comma-separated (with --php)")
	fs.StringVar(&b.debCache, "deb-cache", filepath.Join("images", "out", "debs"), "cache of downloaded Debian packages (php-fpm, Wi-Fi) and firmware")
	fs.BoolVar(&b.zero2wWiFi, "zero2w-wifi", true, "rpi: download the Pi Zero 2 W's Wi-Fi firmware from Raspberry Pi's firmware-nonfree (pinned commit, SHA-256 checked; see images/README.md); false leaves the Zero 2 W without Wi-Fi")
	fs.StringVar(&b.site, "site", "", "bake this site into the image: a directory with sites/*.toml and the content they point at (relative paths); a deployed site wins over it")
	b.settings.register(fs)
	b.fs = fs
}

func (b *buildFlags) build() (*image.Summary, error) {
	if b.board == "" {
		return nil, fmt.Errorf("--board is required (%s)", strings.Join(image.Boards(), ", "))
	}
	board, err := image.LoadBoard(b.board)
	if err != nil {
		return nil, err
	}
	size, err := parseSize(b.size)
	if err != nil {
		return nil, err
	}
	out := b.out
	if out == "" {
		out = filepath.Join("images", "out", "arka-"+b.board+".img")
	}
	version, epoch := sourceStamp(".")
	if b.version != "" {
		version = b.version
	}
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if _, err := fmt.Sscan(s, &epoch); err != nil {
			return nil, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %v", s, err)
		}
	}
	set := map[string]bool{}
	if b.fs != nil {
		b.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	}
	settingsTxt, settingsGiven, settingsKeys, err := b.settings.settings(b.hostname, b.tz, set)
	if err != nil {
		return nil, fmt.Errorf("settings: %v", err)
	}
	site, err := siteFS(b.site)
	if err != nil {
		return nil, err
	}
	pwFile, newPassword, err := buildPasswordFile(b.pwFile, b.hostname)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "Building the Arka appliance image for %s (%s)\n", board.Name, board.Description)
	var php *phpimage.Result
	if b.php {
		fmt.Fprintf(os.Stderr, "Collecting php-fpm for %s from Debian's packages (cache %s)\n", board.GOARCH, b.debCache)
		php, err = phpimage.Collect(phpimage.Options{
			Arch: board.GOARCH, Extensions: strings.Split(b.phpExt, ","), CacheDir: b.debCache,
			Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, "  "+f+"\n", a...) },
		})
		if err != nil {
			return nil, err
		}
	}
	var extra []image.File
	versions := map[string]string{}
	if php != nil {
		extra = php.Files
		for p, v := range php.Packages {
			versions["debian/"+p] = v
		}
	}
	wifi, err := wifiFirmware(board, b.debCache, settingsTxt, b.zero2wWiFi)
	if err != nil {
		return nil, err
	}
	if wifi != nil {
		extra = append(extra, wifi.Files...)
		for p, v := range wifi.Versions {
			versions[p] = v
		}
	}
	sum, err := buildImage(image.Config{
		Board:           board,
		Output:          out,
		Hostname:        b.hostname,
		ArkaPkg:         b.arkaPkg,
		Version:         version,
		PasswordFile:    pwFile,
		Settings:        settingsTxt,
		SettingsGiven:   settingsGiven,
		SettingsKeys:    settingsKeys,
		Site:            site,
		HTTPPort:        b.httpPort,
		HTTPSPort:       b.httpsPort,
		SourceDateEpoch: epoch,
		Size:            size,
		Timezone:        b.tz,
		KernelExtraArgs: b.extraArgs,
		ExtraFiles:      extra,
		ExtraVersions:   versions,
		Progress:        newBar(os.Stderr),
	})
	if err != nil {
		return nil, err
	}
	printSummary(os.Stdout, sum)
	if newPassword {
		printNewPassword(os.Stdout, b.hostname, pwFile)
	}
	if php != nil {
		printPHP(os.Stdout, php)
	}
	return sum, nil
}

func cmdBuild(args []string) (*image.Summary, error) {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	var b buildFlags
	b.register(fs)
	fs.Parse(args)
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("build: unexpected argument %q", fs.Arg(0))
	}
	return b.build()
}

func printSummary(w io.Writer, s *image.Summary) {
	fmt.Fprintf(w, "\nImage      %s\n", s.Output)
	fmt.Fprintf(w, "Size       %d MiB (boot FAT16 uses %.1f MiB, root SquashFS %.1f MiB)\n", s.Size>>20, float64(s.BootUsed)/(1<<20), float64(s.RootUsed)/(1<<20))
	fmt.Fprintf(w, "Build      %s (build timestamp %s), took %s\n", s.Board, s.BuildTimestamp, s.Duration.Round(100*time.Millisecond))
	fmt.Fprintf(w, "SBOM hash  %s (gokrazy's SBOMHash once this build runs)\n", s.SBOMHash)
	fmt.Fprintln(w, "Partitions")
	roles := map[int]string{1: "boot  FAT16", 2: "root A SquashFS", 3: "root B (empty)", 4: "perm  ext4, grows to the disk at first boot"}
	for _, p := range s.Partitions {
		fmt.Fprintf(w, "  %d  LBA %8d  %7.1f MiB  %s  %s\n", p.Number, p.FirstLBA, float64(p.Size())/(1<<20), p.GUID, roles[p.Number])
	}
	fmt.Fprintln(w, "Versions")
	fmt.Fprintf(w, "  arka          %s\n", s.Versions["arka"])
	var names []string
	for k := range s.Versions {
		if k != "arka" && !strings.HasPrefix(k, "debian/") { // --php's packages: see printPHP
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(w, "  %-13s %s\n", strings.TrimPrefix(k, "github.com/gokrazy/"), s.Versions[k])
	}
	fmt.Fprintf(w, "Password   gokrazy web UI / updates (user gokrazy): see %s\n", s.PasswordFile)
	fmt.Fprintf(w, "Cmdline    %s\n", s.Cmdline)
}

// printPHP lists what --php added, uncompressed (the SquashFS compresses it
// with gzip).
func printPHP(w io.Writer, r *phpimage.Result) {
	var total int64
	for _, p := range r.Parts {
		total += p.Bytes
	}
	fmt.Fprintf(w, "PHP        %s, %.1f MiB before compression, from %d Debian packages (php%s %s)\n",
		r.FPM, float64(total)/(1<<20), len(r.Packages), phpimage.DefaultVersion, r.Packages["php"+phpimage.DefaultVersion+"-fpm"])
	for _, p := range r.Parts {
		fmt.Fprintf(w, "  %-30s %4d files %6.1f MiB\n", p.Name, p.Files, float64(p.Bytes)/(1<<20))
	}
}

func cmdFlash(args []string) error {
	fs := flag.NewFlagSet("flash", flag.ExitOnError)
	img := fs.String("image", "", "image to write")
	force := fs.Bool("force", false, "write even to a mounted, system or non-removable device")
	yes := fs.Bool("yes", false, "do not ask for confirmation before overwriting a device")
	create := fs.Bool("create", false, "write into a new regular file if DEVICE does not exist (for VMs; never under /dev)")
	var b buildFlags
	b.register(fs)
	fs.Parse(args)
	if fs.NArg() != 1 {
		return errors.New("flash: give exactly one target device (or file)")
	}
	target := fs.Arg(0)
	if (*img == "") == (b.board == "") {
		return errors.New("flash: give --image IMG or --board BOARD (to build first)")
	}
	if *img != "" {
		var given []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "hostname", "timezone", "settings", "wifi-country", "wifi-ssid", "wifi-passphrase-file", "wifi-open", "wifi-hidden", "ipv4", "ipv4-gateway", "ipv6", "ipv6-gateway", "dns", "site":
				given = append(given, "--"+f.Name)
			}
		})
		if len(given) > 0 {
			return fmt.Errorf("flash: %s go into the image when it is built: use --board BOARD instead of --image (flash builds it), or give them to build", strings.Join(given, " "))
		}
	}
	if _, err := flash.CheckTarget(target, *create); err != nil { // before a build
		return fmt.Errorf("flash: %w", err)
	}
	if *img == "" {
		sum, err := b.build()
		if err != nil {
			return err
		}
		*img = sum.Output
	}
	bar := newBar(os.Stderr)
	phase := ""
	// Every refusal (target, image, device checks) comes before the question.
	plan, err := flash.Prepare(flash.Options{
		Image: *img, Target: target, Force: *force, Create: *create,
		Progress: func(p string, done, total int64) {
			if p != phase {
				phase = p
				bar.Stage(map[string]int{"write": 1, "verify": 2}[p], 2, p+" "+target)
			}
			bar.Bytes(done, total)
		},
	})
	if err != nil {
		return fmt.Errorf("flash: %w", err)
	}
	if err := confirmFlash(target, *img, *yes, os.Stdin, os.Stderr); err != nil {
		plan.Close()
		return err
	}
	res, err := plan.Write()
	if err != nil {
		return fmt.Errorf("flash: %w", err)
	}
	fmt.Printf("\nWrote %s to %s (%d MiB) and verified it: SHA-256 %x\n", *img, target, res.Bytes>>20, res.SHA256)
	fmt.Println("At first boot, /perm grows to the whole card or disk.")
	return nil
}

// confirmFlash names the target (model and size) and, for a block device,
// asks for "yes" on in unless yes is set; off a terminal it refuses instead
// of waiting.
func confirmFlash(target, img string, yes bool, in *os.File, out io.Writer) error {
	fmt.Fprintf(out, "Writing %s to %s\n", img, flash.Describe(target))
	st, err := os.Stat(target)
	if err != nil || st.Mode()&os.ModeDevice == 0 || yes {
		return nil
	}
	if _, err := unix.IoctlGetTermios(int(in.Fd()), unix.TCGETS); err != nil {
		return errors.New("flash: everything on the device would be lost, and there is no terminal to confirm on: add --yes")
	}
	fmt.Fprint(out, "Everything on it will be lost. Type yes to continue: ")
	line, _ := bufio.NewReader(in).ReadString('\n')
	if strings.TrimSpace(line) != "yes" {
		return errors.New("flash: not confirmed; nothing written")
	}
	return nil
}

func cmdVM(args []string) error {
	fs := flag.NewFlagSet("vm", flag.ExitOnError)
	board := fs.String("board", "amd64", "board (amd64; rpi boots QEMU's raspi3b)")
	img := fs.String("image", "", "image (default images/out/arka-BOARD.img)")
	diskSize := fs.String("disk-size", "4G", "size of the VM's disk (a sparse copy of the image; /perm grows into it)")
	kvm := fs.Bool("kvm", false, "use KVM instead of TCG emulation")
	fs.Parse(args)
	if *img == "" {
		*img = filepath.Join("images", "out", "arka-"+*board+".img")
	}
	size, err := parseSize(*diskSize)
	if err != nil {
		return err
	}
	o := vm.Options{Board: *board, Image: *img, Dir: filepath.Join("images", "out", "vm-"+*board), DiskSize: size, KVM: *kvm, Stdout: os.Stderr}
	if *board == "rpi" {
		bd, err := image.LoadBoard("rpi")
		if err != nil {
			return err
		}
		if o.KernelDir, err = image.ModuleDir("go", bd.Kernel); err != nil {
			return err
		}
	}
	// The VM's key is made at its first boot: an earlier VM's pin goes
	// now, and the key its console shows is pinned once it is there.
	if err := unpinVM(); err != nil {
		return err
	}
	hostname := imageHostname(*img)
	v, err := vm.Start(o)
	if err != nil {
		return err
	}
	defer v.Stop()
	fmt.Printf("QEMU started (%s); console log: %s\n", *board, v.SerialLog)
	fmt.Printf("  Arka          http://127.0.0.1:%d/   https://127.0.0.1:%d/\n", v.Ports[80], v.Ports[443])
	pwFile, _ := devices.PasswordFile(hostname)
	fmt.Printf("  gokrazy UI    http://127.0.0.1:%d/   https://127.0.0.1:%d/   (user gokrazy, password in %s)\n", v.Ports[8080], v.Ports[8443], pwFile)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		url := fmt.Sprintf("http://127.0.0.1:%d/", v.Ports[80])
		// Short per-try timeout: until the guest is up, QEMU's user network
		// accepts the connection and then leaves it hanging.
		client := &http.Client{Timeout: 2 * time.Second}
		for ctx.Err() == nil {
			if resp, err := client.Get(url); err == nil {
				resp.Body.Close()
				fmt.Printf("Arka answered after %s (QEMU start to first response).\n", time.Since(v.Started).Round(100*time.Millisecond))
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		// arka-init logs the key before Arka starts; wait a little in case.
		fp := ""
		for end := time.Now().Add(30 * time.Second); ctx.Err() == nil && fp == "" && time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
			fp = consoleKey(v.SerialTail(1 << 20))
		}
		if ctx.Err() != nil {
			return
		}
		if fp == "" {
			fmt.Printf("The console shows no device key (\"device key SHA256 …\"): the first command below asks you to confirm the key the VM presents.\n")
		} else if pin, err := pinVM(fp); err != nil {
			fmt.Printf("Pinning the VM's key: %v\n", err)
		} else {
			fmt.Printf("Its key SHA256:%s (from its console) is pinned as device %q (%s).\n", fp, vmDevice, pin)
		}
		fmt.Printf("Deploy a site to it, ask its status, update it over its HTTPS API (from this directory):\n")
		if err := vmCommands(os.Stdout, *board, hostname, v.Ports[8443], v.Ports[80]); err != nil {
			fmt.Printf("  %v\n", err)
		}
		fmt.Printf("Press Ctrl-C to stop the VM.\n")
	}()
	select {
	case <-ctx.Done():
	case <-v.Done():
		return fmt.Errorf("QEMU exited: %v\n%s", v.Err(), v.SerialTail(2000))
	}
	return nil
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q (e.g. 1200M, 4G)", s)
	}
	n *= mult
	if n%partition.SectorSize != 0 {
		return 0, fmt.Errorf("size %d is not a multiple of 512", n)
	}
	return n, nil
}
