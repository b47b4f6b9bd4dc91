package image

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/arkaweb/arka/appliance/initcfg"
	"github.com/arkaweb/arka/images"
)

// program is one program built for the device.
type program struct {
	pkg  string // go package
	dest string // path in the root file system
}

func (c *Config) programs() []program {
	return []program{
		{"./cmd/arka-init", "/gokrazy/init"},
		{"github.com/gokrazy/gokrazy/cmd/dhcp", "/gokrazy/dhcp"},
		{"github.com/gokrazy/gokrazy/cmd/ntp", "/gokrazy/ntp"},
		{"github.com/gokrazy/gokrazy/cmd/randomd", "/gokrazy/randomd"},
		{c.ArkaPkg, initcfg.ArkaBinary},
	}
}

// buildBinaries builds every program for linux/GOARCH in one go build
// invocation, reproducibly (-trimpath, no build ID, no VCS stamp), into
// work/bin; it returns the built file for each root path.
func (c *Config) buildBinaries(work, buildTimestamp string) (map[string]string, error) {
	dir := filepath.Join(work, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// -X of a symbol a program lacks is ignored, so one set serves all:
	// server.Version for Arka, main.init* for arka-init.
	ldflags := "-s -w -buildid= -X github.com/arkaweb/arka/server.Version=" + c.Version +
		" -X main.initBuildTimestamp=" + buildTimestamp + " -X main.initVersion=" + c.Version
	args := []string{"build", "-o", dir + string(filepath.Separator), "-trimpath", "-buildvcs=false",
		"-tags", "gokrazy,netgo,osusergo", "-ldflags", ldflags}
	out := map[string]string{}
	seen := map[string]bool{}
	for _, p := range c.programs() {
		name := path.Base(p.pkg)
		if seen[name] {
			return nil, fmt.Errorf("image: two programs named %s", name)
		}
		seen[name] = true
		args = append(args, p.pkg)
		out[p.dest] = filepath.Join(dir, name)
	}
	cmd := exec.Command(c.GoCmd, args...)
	cmd.Dir = c.ModuleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+c.Board.GOARCH)
	if o, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("image: building for linux/%s: %v\n%s", c.Board.GOARCH, err, o)
	}
	return out, nil
}

// initConfig is the service table arka-init supervises.
func (c *Config) initConfig() initcfg.Config {
	svcs := []initcfg.Service{
		{Path: "/gokrazy/dhcp", Args: []string{"-interface=" + initcfg.Netif}},
		{Path: "/gokrazy/ntp"},
		{Path: "/gokrazy/randomd"},
		// -appliance: Arka never exits because of its configuration
		// (cmd/arka/appliance.go).
		{Path: initcfg.ArkaService, Args: []string{"-appliance", "-c", initcfg.Sites, "-state", initcfg.State}},
	}
	return initcfg.Config{Services: append(svcs, c.ExtraServices...)}
}

// rootFiles returns the root file system's content (besides the binaries).
func (c *Config) rootFiles(pw string) ([]File, error) {
	cfg, err := c.initConfig().Marshal()
	if err != nil {
		return nil, err
	}
	files := []File{
		{Path: "/etc/hostname", Data: []byte(c.Hostname), Mode: 0o644}, // no newline: passed to sethostname as is
		{Path: "/etc/hosts", Data: []byte("127.0.0.1 localhost\n::1 localhost\n"), Mode: 0o644},
		{Path: "/etc/resolv.conf", Data: []byte("/tmp/resolv.conf"), Mode: fs.ModeSymlink | 0o777},
		{Path: "/var", Data: []byte("/perm/var"), Mode: fs.ModeSymlink | 0o777},
		{Path: initcfg.ArkaService, Data: []byte("/gokrazy/init"), Mode: fs.ModeSymlink | 0o777},
		{Path: "/etc/localtime", Source: filepath.Join("/usr/share/zoneinfo", c.Timezone), Mode: 0o644},
		{Path: "/etc/ssl/ca-bundle.pem", Source: c.CABundle, Mode: 0o644},
		{Path: "/etc/gokr-pw.txt", Data: []byte(pw), Mode: 0o400},
		{Path: "/etc/http-port.txt", Data: []byte(strconv.Itoa(c.HTTPPort)), Mode: 0o644},
		{Path: "/etc/https-port.txt", Data: []byte(strconv.Itoa(c.HTTPSPort)), Mode: 0o644},
		{Path: "/etc/gokrazy/mountdevices.json", Data: []byte("null"), Mode: 0o644},
		{Path: initcfg.Path, Data: cfg, Mode: 0o644},
		{Path: initcfg.SettingsBuildPath, Data: c.settingsBuild(), Mode: 0o644},
	}
	if zi := c.zoneinfoZip(); zi != "" {
		files = append(files, File{Path: initcfg.ZoneinfoPath, Source: zi, Mode: 0o644})
	}
	for _, d := range []string{"/bin", "/dev", "/etc", "/proc", "/sys", "/tmp", "/perm", "/lib", "/run", "/mnt"} {
		files = append(files, File{Path: d, Mode: fs.ModeDir | 0o755})
	}
	site := c.Site
	if site == nil {
		sub, err := fs.Sub(images.Site, "site")
		if err != nil {
			return nil, err
		}
		site = sub
	}
	err = fs.WalkDir(site, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		dst := "/etc/arka/" + p
		if d.IsDir() {
			files = append(files, File{Path: dst, Mode: fs.ModeDir | 0o755})
			return nil
		}
		b, err := fs.ReadFile(site, p)
		if err != nil {
			return err
		}
		files = append(files, File{Path: dst, Data: b, Mode: 0o644})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("image: default site: %v", err)
	}
	return append(files, c.ExtraFiles...), nil
}

// buildRoot assembles the root tree in work/root and compresses it with
// mksquashfs (gzip: the gokrazy kernels read only zlib SquashFS).
func (c *Config) buildRoot(work string, bins map[string]string, kernelDir, pw, out string, versions map[string]string, buildTimestamp string) (sbomHash string, err error) {
	root := filepath.Join(work, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		return "", err
	}
	files, err := c.rootFiles(pw)
	if err != nil {
		return "", err
	}
	for dest, src := range bins {
		files = append(files, File{Path: dest, Source: src, Mode: 0o755})
	}
	sbom, sbomHash, err := sbomFile(bins, versions, c.Board.Name, buildTimestamp)
	if err != nil {
		return "", err
	}
	files = append(files, sbom)
	// Kernel modules, if the kernel package ships them and they match the
	// kernel (kernelDir "" otherwise: checkKernelModules).
	if mods := filepath.Join(kernelDir, "lib", "modules"); kernelDir != "" && dirExists(mods) {
		err := filepath.WalkDir(mods, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(kernelDir, p)
			dst := "/" + filepath.ToSlash(rel)
			if d.IsDir() {
				files = append(files, File{Path: dst, Mode: fs.ModeDir | 0o755})
			} else if d.Type().IsRegular() {
				files = append(files, File{Path: dst, Source: p, Mode: 0o644})
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	for _, f := range files {
		if err := placeFile(root, f); err != nil {
			return "", err
		}
	}
	cmd := exec.Command(lookTool("mksquashfs"), root, out,
		"-comp", "gzip", "-noappend", "-no-xattrs", "-all-root",
		"-all-time", strconv.FormatInt(c.SourceDateEpoch, 10),
		"-mkfs-time", strconv.FormatInt(c.SourceDateEpoch, 10),
		"-quiet", "-no-progress")
	// mksquashfs refuses SOURCE_DATE_EPOCH together with -all-time.
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "SOURCE_DATE_EPOCH=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	if o, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("image: mksquashfs: %v\n%s", err, o)
	}
	return sbomHash, nil
}

// sbomFile is /etc/gokrazy/sbom.json in the form gokrazy's init reads
// ({"sbom_hash", "sbom"}): what the image was built from (module versions,
// Arka's version, the SHA-256 of every program). gokrazy shows sbom_hash as
// SBOMHash in its status JSON, so an update client can tell exactly which
// build is running, even between builds with the same timestamp.
func sbomFile(bins, versions map[string]string, board, buildTimestamp string) (File, string, error) {
	programs := map[string]string{}
	for dest, src := range bins {
		b, err := os.ReadFile(src)
		if err != nil {
			return File{}, "", err
		}
		programs[dest] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	sbom, err := json.Marshal(map[string]any{ // map keys marshal sorted: stable bytes
		"board":           board,
		"build_timestamp": buildTimestamp,
		"versions":        versions,
		"programs":        programs,
	})
	if err != nil {
		return File{}, "", err
	}
	hash := fmt.Sprintf("%x", sha256.Sum256(sbom))
	out, err := json.Marshal(map[string]any{
		"sbom_hash": hash,
		"sbom":      json.RawMessage(sbom),
	})
	if err != nil {
		return File{}, "", err
	}
	return File{Path: "/etc/gokrazy/sbom.json", Data: out, Mode: 0o644}, hash, nil
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// placeFile creates f under root with exactly f's mode.
func placeFile(root string, f File) error {
	if !strings.HasPrefix(f.Path, "/") || strings.Contains(f.Path, "..") {
		return fmt.Errorf("image: root file path %q must be absolute and clean", f.Path)
	}
	if strings.HasPrefix(f.Path, "/perm/") {
		return fmt.Errorf("image: %s: files under /perm are not part of the image", f.Path)
	}
	dst := filepath.Join(root, filepath.FromSlash(f.Path))
	if err := mkdirs(root, filepath.Dir(dst)); err != nil {
		return err
	}
	switch {
	case f.Mode&fs.ModeDir != 0:
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		return os.Chmod(dst, f.Mode.Perm())
	case f.Mode&fs.ModeSymlink != 0:
		os.Remove(dst)
		return os.Symlink(string(f.Data), dst)
	}
	data := f.Data
	if f.Source != "" {
		b, err := os.ReadFile(f.Source)
		if err != nil {
			return fmt.Errorf("image: %s: %v", f.Path, err)
		}
		data = b
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		return err
	}
	return os.Chmod(dst, f.Mode.Perm())
}

// mkdirs creates the directories from root down to dir with mode 0755.
func mkdirs(root, dir string) error {
	if dir == root || dirExists(dir) {
		return nil
	}
	if err := mkdirs(root, filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return err
	}
	return os.Chmod(dir, 0o755)
}
