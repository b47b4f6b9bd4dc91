package image

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/arkaweb/arka/appliance/fat16"
	"github.com/arkaweb/arka/appliance/partition"
	"github.com/arkaweb/arka/appliance/settings"
)

// CmdlinePadding is the number of spaces after the kernel command line in
// cmdline.txt and gokrazy.conf. gokrazy's init edits both files in place
// and cannot change their recorded size, so edits that lengthen the line
// (testboot adds " gokrazy.try_boot_inactive=1", 28 bytes) must consume
// padding that sits AFTER the newline: the text before it stays whole.
const CmdlinePadding = 64

var rootArg = regexp.MustCompile(`(^|\s)root=\S+`)

// cmdline builds the kernel command line (without padding): console(s),
// the kernel package's line with the board's replacements, root= set to
// the first root partition by PARTUUID (§1.4), extra arguments.
func (c *Config) cmdline(kdir string, bootGUID partition.GUID) string {
	base := ""
	if b, err := os.ReadFile(filepath.Join(kdir, "cmdline.txt")); err == nil {
		base = strings.TrimSpace(string(b))
	}
	for _, r := range c.Board.CmdlineReplace {
		base = strings.ReplaceAll(base, r[0], r[1])
	}
	root := "root=PARTUUID=" + bootGUID.String() + "/PARTNROFF=1"
	if rootArg.MatchString(base) {
		base = rootArg.ReplaceAllString(base, "${1}"+root)
	} else {
		base += " " + root
	}
	parts := []string{"console=tty1"}
	if c.Board.SerialConsole != "" {
		parts = append(parts, "console="+c.Board.SerialConsole)
	}
	parts = append(parts, base)
	if c.KernelExtraArgs != "" {
		parts = append(parts, c.KernelExtraArgs)
	}
	return strings.Join(parts, " ")
}

// CmdlineFile is the content of cmdline.txt for a command line: the line,
// a newline (which testboot needs to insert its flag before), then the
// padding.
func CmdlineFile(cmdline string) []byte {
	return []byte(cmdline + "\n" + strings.Repeat(" ", CmdlinePadding))
}

// LoaderEntry is loader/entries/gokrazy.conf for systemd-boot. Its lines
// are separated by "\r" (systemd-boot splits lines at "\r" and "\n"), so
// that gokrazy's testboot, which inserts its flag before every "\n", only
// touches the options line and never the "linux" path.
func LoaderEntry(cmdline string) []byte {
	return append([]byte("title Arka (gokrazy)\rlinux /vmlinuz\roptions "), CmdlineFile(cmdline)...)
}

// writeBoot writes the boot FAT16 into partition p of w and returns the
// bytes the file system takes.
func (c *Config) writeBoot(w io.WriterAt, modDirs map[string]string, p partition.Entry, cmdline string, versions map[string]string, build BuildInfo) (int64, error) {
	var files []fat16.File
	add := func(dir string, globs []string) error {
		for _, g := range globs {
			matches, err := filepath.Glob(filepath.Join(dir, filepath.FromSlash(g)))
			if err != nil {
				return err
			}
			for _, m := range matches {
				rel, _ := filepath.Rel(dir, m)
				files = append(files, fat16.File{Path: filepath.ToSlash(rel), Source: m})
			}
		}
		return nil
	}
	kdir := modDirs[c.Board.Kernel.Module]
	if err := add(kdir, c.Board.Kernel.Files); err != nil {
		return 0, err
	}
	for _, fw := range c.Board.Firmware {
		if err := add(modDirs[fw.Module], fw.Files); err != nil {
			return 0, err
		}
	}
	if c.Board.EEPROM != nil {
		ee, err := eepromFiles(modDirs[c.Board.EEPROM.Module])
		if err != nil {
			return 0, err
		}
		files = append(files, ee...)
	}
	configTxt := []byte{}
	if c.Board.ConfigTxt {
		b, err := os.ReadFile(filepath.Join(kdir, "config.txt"))
		if err != nil {
			return 0, fmt.Errorf("image: kernel package has no config.txt: %v", err)
		}
		configTxt = []byte(strings.ReplaceAll(string(b), "enable_uart=0", "enable_uart=1") + "\n")
	}
	files = append(files,
		fat16.File{Path: "cmdline.txt", Data: CmdlineFile(cmdline)},
		fat16.File{Path: "config.txt", Data: configTxt},
		fat16.File{Path: "loader/entries/gokrazy.conf", Data: LoaderEntry(cmdline)},
		fat16.File{Path: BuildInfoFile, Data: build.marshal()},
		fat16.File{Path: settings.FileName, Data: c.settingsFile()},
	)
	if c.Board.EFILoader != "" {
		files = append(files, fat16.File{Path: c.Board.EFILoaderName, Source: c.Board.EFILoader})
		if b, err := os.ReadFile(c.Board.EFILoader); err == nil {
			versions["systemd-boot"] = systemdBootVersion(b)
		}
	}
	lay, err := fat16.Write(io.NewOffsetWriter(w, p.Offset()), files, fat16.Options{
		Label:      "ARKA",
		VolumeID:   partition.HostHash(c.Hostname),
		ModTime:    time.Unix(c.SourceDateEpoch, 0),
		HiddenSecs: uint32(p.FirstLBA),
		MaxBytes:   p.Size(),
	})
	if err != nil {
		return 0, err
	}
	return int64(lay.TotalSectors) * partition.SectorSize, nil
}

var sdBootVersion = regexp.MustCompile(`#### LoaderInfo: systemd-boot ([^ ]+) ####`)

func systemdBootVersion(b []byte) string {
	if m := sdBootVersion.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256(b))[:19]
}

// eepromFiles picks the newest Raspberry Pi 4/5 bootloader and VL805
// firmware (§2.3): pieeprom.upd + pieeprom.sig, vl805.bin + vl805.sig,
// recovery.bin. The .sig "ts:" line is the release date in the file name,
// not the file's mtime, so the image is reproducible.
func eepromFiles(dir string) ([]fat16.File, error) {
	newest := func(pattern string) (string, error) {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil || len(m) == 0 {
			return "", fmt.Errorf("image: no %s in %s", pattern, dir)
		}
		sort.Strings(m)
		return m[len(m)-1], nil
	}
	sig := func(file string, ts int64) ([]byte, error) {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		return []byte(fmt.Sprintf("%x\nts: %d\n", sha256.Sum256(b), ts)), nil
	}
	pie, err := newest("pieeprom-*.bin")
	if err != nil {
		return nil, err
	}
	date := strings.TrimSuffix(strings.TrimPrefix(path.Base(filepath.ToSlash(pie)), "pieeprom-"), ".bin")
	t, err := time.Parse("2006-01-02", date)
	if err != nil {
		return nil, fmt.Errorf("image: %s: no date in the name", pie)
	}
	vl, err := newest("vl805-*.bin")
	if err != nil {
		return nil, err
	}
	pieSig, err := sig(pie, t.Unix())
	if err != nil {
		return nil, err
	}
	vlSig, err := sig(vl, t.Unix())
	if err != nil {
		return nil, err
	}
	return []fat16.File{
		{Path: "pieeprom.upd", Source: pie},
		{Path: "pieeprom.sig", Data: pieSig},
		{Path: "vl805.bin", Source: vl},
		{Path: "vl805.sig", Data: vlSig},
		{Path: "recovery.bin", Source: filepath.Join(dir, "recovery.bin")},
	}, nil
}
