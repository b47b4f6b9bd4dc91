// Command arka-init is /gokrazy/init in an Arka appliance image: it boots
// the system with gokrazy (mounts, hostname, password, web UI and the
// over-the-air update endpoints, watchdog), moves a clock that is behind
// the build time forward (boards without a real-time clock), grows /perm to
// the whole disk on first boot, picks Arka's configuration (/perm/arka/ if present, else the
// copy baked into the image), and supervises the programs listed in
// /etc/arka/init.json (gokrazy's dhcp, ntp, randomd and Arka).
//
// Only its own log reaches the console; the supervised programs log into
// gokrazy's in-memory ring buffers (web UI: /log?path=/user/arka).
package main

import (
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gokrazy/gokrazy"

	"github.com/arkaweb/arka/appliance/initcfg"
	"github.com/arkaweb/arka/server/status"
)

// Set with -ldflags -X by the image builder. initBuildTimestamp is what
// gokrazy reports as BuildTimestamp (the update client polls for it).
var (
	initBuildTimestamp = "unknown"
	initVersion        = "dev"
)

// Paths on the device.
const (
	permArka   = "/perm/arka"
	bakedSites = "/etc/arka/sites"
	bakedWWW   = "/etc/arka/www"
	tmpArka    = "/tmp/arka"
)

func main() {
	if filepath.Base(os.Args[0]) == filepath.Base(initcfg.ArkaService) {
		os.Exit(superviseArka()) // started by gokrazy as /user/arka
	}
	log.SetPrefix("arka-init: ")
	log.SetFlags(0)
	log.Printf("Arka %s, built %s", initVersion, initBuildTimestamp)
	if err := gokrazy.Boot(initBuildTimestamp); err != nil {
		log.Fatal(err)
	}
	log.Printf("hostname %q, model %q", hostnameOf(), gokrazy.Model())
	clockFloor(initBuildTimestamp)
	go keepWatchdog()
	updates := startUpdateAgent() // over-the-air updates: update_linux.go

	if msg, err := growPerm(); err != nil {
		log.Printf("perm: not grown: %v", err)
	} else if msg != "" {
		log.Printf("perm: %s", msg)
	}
	log.Printf("perm: %s", describePerm())

	netif := cmdlineValue("arka.netif", "eth0")
	sets := loadSettings(netif) // settings.txt on the boot partition: settings_linux.go

	sites, state := arkaDirs()
	sitesArg, sites := startDeploy(sites, state, sets) // deploy_linux.go: a deployed site wins
	servePassword(http.DefaultServeMux)                // password_linux.go
	log.Printf("arka: sites %s, state %s", sites, state)

	cfg, err := initcfg.Load(initcfg.Path)
	if err != nil {
		log.Fatal(err)
	}
	vars := map[string]string{
		initcfg.Sites: sitesArg,
		initcfg.State: state,
		initcfg.Netif: netif,
	}
	// A readiness file left by the previous boot must not vouch for this
	// one's Arka.
	os.Remove(filepath.Join(state, status.ReadyFile))
	var services []*gokrazy.Service
	for _, s := range cfg.Services {
		if _, err := os.Stat(s.Path); err != nil {
			log.Printf("service %s: %v (skipped)", s.Path, err)
			continue
		}
		if sets.skip(s, netif) {
			continue
		}
		cmd := exec.Command(s.Path, initcfg.Expand(s.Args, vars)...)
		cmd.Env = append(append(os.Environ(), initcfg.Expand(s.Env, vars)...), sets.env...)
		switch {
		case s.DontStart:
			services = append(services, gokrazy.NewStoppedService(cmd))
		case s.WaitForClock:
			services = append(services, gokrazy.NewWaitForClockService(cmd))
		default:
			services = append(services, gokrazy.NewService(cmd))
		}
	}
	services = append(services, sets.wifiServices()...)
	startMDNS()  // mdns_linux.go: <hostname>.local
	serveHTTPS() // tls_linux.go: the UI and APIs over HTTPS with the device's own key
	if err := gokrazy.SuperviseServices(services); err != nil {
		log.Fatal(err)
	}
	runTrial(updates, sites, state)
	select {}
}

func hostnameOf() string {
	h, _ := os.Hostname()
	return h
}

// cmdlineValue returns the value of key=value on the kernel command line,
// or def. (arka.netif= is for test machines such as QEMU's raspi3b, whose
// only network interface is usb0.)
func cmdlineValue(key, def string) string {
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return def
	}
	for _, f := range strings.Fields(string(b)) {
		if v, ok := strings.CutPrefix(f, key+"="); ok && v != "" {
			return v
		}
	}
	return def
}

// arkaDirs picks Arka's sites and state directories:
//   - sites: /perm/arka/sites if it exists; else the baked /etc/arka/sites,
//     pointed at /perm/arka/www instead of /etc/arka/www if that exists;
//   - state: /perm/arka/state if /perm is writable, else a tmpfs directory.
func arkaDirs() (sites, state string) {
	state = filepath.Join(permArka, "state")
	if err := writable(state); err != nil {
		log.Printf("arka: %v; keeping state in memory", err)
		state = filepath.Join(tmpArka, "state")
		if err := os.MkdirAll(state, 0o700); err != nil {
			log.Print(err)
		}
	}
	if isDir(filepath.Join(permArka, "sites")) {
		return filepath.Join(permArka, "sites"), state
	}
	www := filepath.Join(permArka, "www")
	if !isDir(www) {
		return bakedSites, state
	}
	// The baked site files, with their document root moved to /perm/arka/www.
	dir := filepath.Join(tmpArka, "sites")
	if err := rewriteSites(bakedSites, dir, bakedWWW, www); err != nil {
		log.Printf("arka: %v; serving the baked site", err)
		return bakedSites, state
	}
	return dir, state
}

func rewriteSites(from, to, oldRoot, newRoot string) error {
	ents, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".toml") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		b = []byte(strings.ReplaceAll(string(b), `"`+oldRoot+`"`, `"`+newRoot+`"`))
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// writable creates dir and proves that a file can be written in it.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	probe := filepath.Join(dir, ".arka-init-probe")
	if err := os.WriteFile(probe, nil, 0o600); err != nil {
		return err
	}
	return os.Remove(probe)
}

// mountOf returns device, type and options of the file system mounted at
// mountpoint, from /proc/self/mounts.
func mountOf(mountpoint string) (dev, fstype, opts string, err error) {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return "", "", "", err
	}
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[1] == mountpoint {
			dev, fstype, opts, found = f[0], f[2], f[3], true // the last one wins
		}
	}
	if !found {
		return "", "", "", errors.New(mountpoint + " is not mounted")
	}
	return dev, fstype, opts, nil
}

func describePerm() string {
	dev, fstype, opts, err := mountOf("/perm")
	if err != nil {
		return err.Error()
	}
	mode := "ro"
	for _, o := range strings.Split(opts, ",") {
		if o == "rw" {
			mode = "rw"
		}
	}
	size, _ := fsSize("/perm")
	return fmt.Sprintf("%s %s %s %d bytes", dev, fstype, mode, size)
}
