package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gokrazy/gokrazy"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/arkaweb/arka/appliance/fat16"
	"github.com/arkaweb/arka/appliance/initcfg"
	"github.com/arkaweb/arka/appliance/settings"
	"github.com/arkaweb/arka/internal/atomicfile"
	"github.com/arkaweb/arka/server/status"
)

// Where arka-init keeps the settings file it used (so an over-the-air
// update, which rewrites the boot partition, does not lose them).
const (
	keptSettings = "/perm/arka/settings.txt"
	bootMount    = "/tmp/arka/boot"
	wpaConf      = "/tmp/arka/wpa_supplicant.conf"
	wpaCtrl      = "/run/wpa_supplicant"
	wpaBinary    = "/sbin/wpa_supplicant"
)

// settingsState is what became of the settings file at this boot (the
// status page and the log show it).
type settingsState struct {
	File     string   `json:"file"`               // where it was read
	Found    bool     `json:"found"`              // the boot partition has one
	Restored bool     `json:"restored,omitempty"` // the device's own file (with the settings the update gave one by one) replaced the one an update brought
	Errors   []string `json:"errors,omitempty"`   // file:line:col: message; those settings keep their defaults
	Applied  []string `json:"applied,omitempty"`  // what was set, in words (no passphrases)
	WiFi     string   `json:"wifi,omitempty"`     // Wi-Fi state in words

	s settings.Settings
	// skipDHCP names interfaces with a static IPv4 address.
	skipDHCP map[string]bool
	// env is added to every supervised program's environment (TZ).
	env []string
	// wifiIface is the wireless interface to run the supplicant and DHCP on.
	wifiIface string
}

// loadSettings reads settings.txt from the boot partition (restoring the
// device's own after an update, or merging the settings the update gave
// into it, see settings.Choose), parses it, and
// applies what must be in place before the services start: hostname,
// time zone, static addresses, the Wi-Fi supplicant's configuration. A
// mistake is logged (console) and recorded for the status page; the
// setting keeps its default and the boot goes on.
func loadSettings(netif string) *settingsState {
	st := &settingsState{File: "boot partition: " + settings.FileName, skipDHCP: map[string]bool{},
		env: []string{status.ApplianceEnv + "=" + applianceStatus}}
	boot, dev, err := readBootFile(settings.FileName)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		log.Printf("settings: cannot read %s from the boot partition: %v; using the defaults", settings.FileName, err)
		st.Errors = append(st.Errors, fmt.Sprintf("%s: cannot read it: %v", settings.FileName, err))
		return st
	default:
		st.Found = true
	}
	var build settings.Build
	if b, err := os.ReadFile(initcfg.SettingsBuildPath); err == nil {
		json.Unmarshal(b, &build)
	}
	kept, _ := os.ReadFile(keptSettings)
	if len(kept) == 0 {
		kept = nil
	}
	data, restore := settings.Choose(boot, build, kept)
	if restore {
		st.Restored = true
		if sameBytes(data, kept) {
			log.Printf("settings: the boot partition's %s came with an update and nobody set it; using this device's own from before the update (%s)", settings.FileName, keptSettings)
		} else {
			log.Printf("settings: the update set %s; this device keeps its other settings from before the update (%s), written back to the boot partition's %s without that file's comments", strings.Join(build.Keys, ", "), keptSettings, settings.FileName)
		}
		if err := writeBootFile(dev, settings.FileName, data); err != nil {
			log.Printf("settings: writing it back to the boot partition: %v", err)
		}
	}
	if data == nil {
		log.Printf("settings: no %s on the boot partition; using the defaults", settings.FileName)
		return st
	}
	s, errs, from := settings.ParseOrKept(settings.FileName, data, kept)
	for _, e := range errs {
		switch from {
		case settings.FromFile:
			log.Printf("settings: %v (that setting keeps its default)", e)
		case settings.FromKept:
			log.Printf("settings: %v (the file does not load: using the last settings that did, kept in %s)", e, keptSettings)
		default:
			log.Printf("settings: %v (the file does not load: using the defaults)", e)
		}
		st.Errors = append(st.Errors, e.Error())
	}
	if from == settings.FromKept {
		st.Errors = append(st.Errors, fmt.Sprintf("%s does not load: using the last settings that did (kept in %s)", settings.FileName, keptSettings))
	}
	// The kept copy is the file the device used, mistakes and all (those
	// settings kept their defaults): an update that brings the build's
	// file back restores it (settings.Choose), not an older one. A merged
	// file is kept at once, so that a failed write-back merges the same.
	if from == settings.FromFile && !sameBytes(kept, data) {
		if err := os.MkdirAll(filepath.Dir(keptSettings), 0o700); err == nil {
			if err := writeAtomic(keptSettings, data, 0o600); err != nil {
				log.Printf("settings: %v", err)
			}
		}
	}
	st.s = s
	st.apply(netif)
	for _, a := range st.Applied {
		log.Printf("settings: %s", a)
	}
	return st
}

func sameBytes(a, b []byte) bool { return string(a) == string(b) }

func (st *settingsState) apply(netif string) {
	s := st.s
	if s.Hostname != "" {
		if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
			st.fail("hostname %q: %v", s.Hostname, err)
		} else {
			st.Applied = append(st.Applied, fmt.Sprintf("hostname %s (%s.local on the LAN)", s.Hostname, s.Hostname))
		}
	}
	if s.Timezone != "" {
		st.env = append(st.env, "TZ="+s.Timezone, "ZONEINFO="+initcfg.ZoneinfoPath)
		os.Setenv("ZONEINFO", initcfg.ZoneinfoPath)
		if loc, err := time.LoadLocation(s.Timezone); err == nil {
			time.Local = loc
		}
		st.Applied = append(st.Applied, "time zone "+s.Timezone)
	}
	if s.IPv4.Enabled() || s.IPv6.Enabled() {
		// The wired interface, or on a board without one (Pi Zero 2 W)
		// the wireless one.
		iface := netif
		if _, err := net.InterfaceByName(netif); err != nil {
			if w := wirelessInterfaces(); len(w) > 0 {
				iface = w[0]
			}
		}
		for _, f := range []struct {
			name string
			c    settings.Static
		}{{"IPv4", s.IPv4}, {"IPv6", s.IPv6}} {
			if !f.c.Enabled() {
				continue
			}
			if err := staticAddress(iface, f.c); err != nil {
				st.fail("%s address %s on %s: %v", f.name, f.c.Address, iface, err)
				continue
			}
			msg := fmt.Sprintf("%s address %s on %s", f.name, f.c.Address, iface)
			if f.c.Gateway.IsValid() {
				msg += ", gateway " + f.c.Gateway.String()
			}
			st.Applied = append(st.Applied, msg)
		}
		if s.IPv4.Enabled() {
			st.skipDHCP[iface] = true
		}
		if len(s.DNS) > 0 {
			var b strings.Builder
			for _, a := range s.DNS {
				fmt.Fprintf(&b, "nameserver %s\n", a)
			}
			// /etc/resolv.conf links to /tmp/resolv.conf (gokrazy's layout).
			if err := writeAtomic("/tmp/resolv.conf", []byte(b.String()), 0o644); err != nil {
				st.fail("dns: %v", err)
			}
		}
	}
	st.wifi()
}

func (st *settingsState) fail(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	log.Printf("settings: %s", msg)
	st.Errors = append(st.Errors, msg)
}

// wifi finds the wireless interface and writes the supplicant's
// configuration. QEMU's machines have none: that is said once, plainly.
func (st *settingsState) wifi() {
	w := st.s.WiFi
	ifaces := wirelessInterfaces()
	if loadWiFiModules() && len(w.Networks) > 0 && len(ifaces) == 0 {
		ifaces = waitWireless(8 * time.Second) // the chip loads its firmware
	}
	switch {
	case len(w.Networks) == 0 && len(ifaces) == 0:
		st.WiFi = "no networks set; no wireless interface"
		return
	case len(w.Networks) == 0:
		st.WiFi = fmt.Sprintf("no networks set in %s (wireless interface %s unused)", settings.FileName, ifaces[0])
		return
	case len(ifaces) == 0:
		st.WiFi = fmt.Sprintf("no wireless interface on this machine: the %d network(s) in %s are not used", len(w.Networks), settings.FileName)
		if c := noFirmwareFor("/"); c != "" {
			st.WiFi += fmt.Sprintf(" (this image carries no Wi-Fi firmware for %s: rebuild it where Raspberry Pi's firmware-nonfree can be downloaded, see images/README.md)", c)
		}
		log.Printf("wifi: %s", st.WiFi)
		return
	}
	st.wifiIface = ifaces[0]
	if _, err := os.Stat(wpaBinary); err != nil {
		st.WiFi = fmt.Sprintf("wireless interface %s, but this image has no %s", st.wifiIface, wpaBinary)
		log.Printf("wifi: %s", st.WiFi)
		st.wifiIface = ""
		return
	}
	if err := writeAtomic(wpaConf, settings.SupplicantConf(w, wpaCtrl), 0o600); err != nil {
		st.fail("wifi: %v", err)
		st.wifiIface = ""
		return
	}
	var names []string
	for _, n := range w.Networks {
		names = append(names, fmt.Sprintf("%q", n.SSID))
	}
	st.WiFi = fmt.Sprintf("%s: joining %s (country %s)", st.wifiIface, strings.Join(names, ", "), w.Country)
	log.Printf("wifi: %s", st.WiFi)
}

// wirelessInterfaces lists network interfaces with a wireless PHY.
func wirelessInterfaces() []string {
	ents, _ := os.ReadDir("/sys/class/net")
	var out []string
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join("/sys/class/net", e.Name(), "wireless")); err == nil {
			out = append(out, e.Name())
		} else if _, err := os.Stat(filepath.Join("/sys/class/net", e.Name(), "phy80211")); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// staticAddress configures a static address and default route on iface,
// waiting up to 20 s for the interface to appear (drivers may be slow).
func staticAddress(iface string, c settings.Static) error {
	var link netlink.Link
	var err error
	for i := 0; i < 40; i++ {
		if link, err = netlink.LinkByName(iface); err == nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return err
	}
	ip := c.Address.Addr().AsSlice()
	bits := c.Address.Bits()
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, len(ip)*8)}}
	if err := netlink.AddrReplace(link, addr); err != nil {
		return err
	}
	if c.Gateway.IsValid() {
		gw := net.IP(c.Gateway.AsSlice())
		var dst *net.IPNet
		if c.Gateway.Is4() {
			dst = &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}
		} else {
			dst = &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
		}
		if err := netlink.RouteReplace(&netlink.Route{LinkIndex: link.Attrs().Index, Dst: dst, Gw: gw}); err != nil {
			return fmt.Errorf("default route via %s: %v", c.Gateway, err)
		}
	}
	return nil
}

// bootPartition returns /dev/<name> of partition 1 of the disk the root
// file system is on.
func bootPartition() (string, error) {
	var st unix.Stat_t
	if err := unix.Stat("/", &st); err != nil {
		return "", err
	}
	sys, err := filepath.EvalSymlinks(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return "", fmt.Errorf("the root file system is not on a block device: %v", err)
	}
	disk := filepath.Dir(sys)
	ents, err := os.ReadDir(disk)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join(disk, e.Name(), "partition")); err == nil && strings.TrimSpace(string(b)) == "1" {
			return "/dev/" + e.Name(), nil
		}
	}
	return "", fmt.Errorf("%s has no partition 1", filepath.Base(disk))
}

// readBootFile reads a file from the boot partition's root, mounted
// read-only as vfat for the moment (the kernel reads any FAT a computer
// may have written: long names, fragmented files). It returns the
// partition's device for writeBootFile.
func readBootFile(name string) (data []byte, dev string, err error) {
	dev, err = bootPartition()
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(bootMount, 0o700); err != nil {
		return nil, dev, err
	}
	if err := unix.Mount(dev, bootMount, "vfat", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		// A kernel without vfat: read the file the way gokrazy's init
		// reads cmdline.txt (contiguous 8.3 files, as the image has them).
		log.Printf("settings: mounting %s as vfat: %v; reading the FAT directly", dev, err)
		f, ferr := os.Open(dev)
		if ferr != nil {
			return nil, dev, ferr
		}
		defer f.Close()
		off, n, ferr := fat16.Extents(f, "/"+name)
		if ferr != nil {
			return nil, dev, fmt.Errorf("%v: %w", ferr, os.ErrNotExist)
		}
		data = make([]byte, n)
		_, ferr = f.ReadAt(data, off)
		return data, "", ferr
	}
	defer unix.Unmount(bootMount, 0)
	data, err = os.ReadFile(filepath.Join(bootMount, name))
	return data, dev, err
}

// writeBootFile replaces a file in the boot partition's root.
func writeBootFile(dev, name string, data []byte) error {
	if dev == "" {
		return errors.New("no boot partition")
	}
	if err := unix.Mount(dev, bootMount, "vfat", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting %s: %v", dev, err)
	}
	werr := os.WriteFile(filepath.Join(bootMount, name), data, 0o644)
	unix.Sync()
	if err := unix.Unmount(bootMount, 0); err != nil && werr == nil {
		werr = err
	}
	return werr
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, mode)
}

// skip reports whether a service from init.json must not run with these
// settings: gokrazy's DHCP client on an interface with a static IPv4
// address.
func (st *settingsState) skip(s initcfg.Service, netif string) bool {
	if s.Path == "/gokrazy/dhcp" && st.skipDHCP[netif] {
		log.Printf("settings: not starting DHCP on %s (static IPv4 address)", netif)
		return true
	}
	return false
}

// wifiServices are the supplicant and a DHCP client for the wireless
// interface, when the settings name networks and the machine has one.
func (st *settingsState) wifiServices() []*gokrazy.Service {
	if st.wifiIface == "" {
		return nil
	}
	sup := exec.Command(wpaBinary, "-i", st.wifiIface, "-c", wpaConf, "-D", "nl80211")
	sup.Env = append(os.Environ(), st.env...)
	svcs := []*gokrazy.Service{gokrazy.NewService(sup)}
	if !st.s.IPv4.Enabled() || !st.skipDHCP[st.wifiIface] {
		dhcp := exec.Command("/gokrazy/dhcp", "-interface="+st.wifiIface)
		svcs = append(svcs, gokrazy.NewService(dhcp))
	}
	return svcs
}
