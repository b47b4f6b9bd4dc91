package image

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KernelRelease returns the release of a kernel image, as uname -r would
// print it on the running kernel ("7.1.2", "6.12.47-v8"): for an x86
// bzImage the kernel_version string of its boot protocol header (Linux
// Documentation/arch/x86/boot.rst: "HdrS" at 0x202, the string at 0x200
// plus the 16-bit value at 0x20E); otherwise the "Linux version " banner
// of an uncompressed image (the arm64 Image).
func KernelRelease(img []byte) (string, error) {
	if len(img) > 0x210 && string(img[0x202:0x206]) == "HdrS" {
		off := 0x200 + int(binary.LittleEndian.Uint16(img[0x20E:]))
		if off < len(img) {
			s := img[off:]
			if i := bytes.IndexByte(s, 0); i >= 0 {
				s = s[:i]
			}
			if f := strings.Fields(string(s)); len(f) > 0 {
				return f[0], nil
			}
		}
	}
	const banner = "Linux version "
	if i := bytes.Index(img, []byte(banner)); i >= 0 {
		rest := img[i+len(banner):]
		if j := bytes.IndexAny(rest, " \x00"); j > 0 {
			return string(rest[:j]), nil
		}
	}
	return "", errors.New("no kernel version found (neither an x86 boot header nor a Linux version banner)")
}

// checkKernelModules compares the kernel image's release with the module
// directories the kernel package ships (lib/modules/<release>/): modules
// built for another release never load. It returns whether the root file
// system gets them: not when the board says omit_modules.
func checkKernelModules(b *Board, kernelDir string) (ship bool, err error) {
	mods := filepath.Join(kernelDir, "lib", "modules")
	ents, err := os.ReadDir(mods)
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if b.Kernel.OmitModules {
		return false, nil
	}
	img, err := os.ReadFile(filepath.Join(kernelDir, "vmlinuz"))
	if err != nil {
		return false, fmt.Errorf("image: kernel %s: %v", b.Kernel.Module, err)
	}
	rel, err := KernelRelease(img)
	if err != nil {
		return false, fmt.Errorf("image: kernel %s@%s: vmlinuz: %v", b.Kernel.Module, b.Kernel.Version, err)
	}
	for _, e := range ents {
		if e.IsDir() && e.Name() != rel {
			return false, fmt.Errorf("image: kernel %s@%s: vmlinuz is Linux %s but its modules are for %s (lib/modules/%s), so none would load: refusing to build (use a kernel whose modules match, or set omit_modules = true under [kernel] in images/boards/%s.toml)",
				b.Kernel.Module, b.Kernel.Version, rel, e.Name(), e.Name(), b.Name)
		}
	}
	return true, nil
}
