// Package vm boots an Arka image under QEMU with the guest's ports
// forwarded to loopback, for `arka-appliance vm` and the end-to-end tests.
//
//   - amd64: qemu-system-x86_64 -machine q35, UEFI from OVMF (Debian: ovmf),
//     virtio disk and NIC, i6300esb watchdog; TCG unless KVM is asked for.
//   - rpi: qemu-system-aarch64 -M raspi3b with the kernel and device tree
//     loaded directly (the Pi firmware, config.txt and EEPROM files are not
//     exercised), the image as SD card, a USB network adapter (usb0). The
//     command line is QEMU-only: console on the mini UART, the BCM2835
//     watchdog driver blacklisted (QEMU resets when it is opened) and
//     arka.netif=usb0 for DHCP.
//
// The image is copied (sparsely) into the VM's directory first, grown to
// DiskSize, so the original stays untouched and /perm growth is exercised.
package vm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/arkaweb/arka/appliance/partition"
)

// Options describe one VM.
type Options struct {
	Board     string // "amd64" or "rpi"
	Image     string // built image
	Dir       string // working directory: disk copy, firmware variables, serial logs
	DiskSize  int64  // size of the VM's disk; default: the image size (rpi: next power of two)
	KernelDir string // rpi: directory with vmlinuz and bcm2710-rpi-3-b.dtb (the kernel.rpi module)
	Memory    string // default "1024"
	// GuestPorts are forwarded from free loopback ports; default 80, 443
	// (Arka), 8080 (gokrazy's web UI, plain HTTP) and 8443 (the HTTPS web
	// UI, update and deploy API).
	GuestPorts []int
	Stdout     io.Writer // QEMU's own output; nil discards it
	// KVM uses hardware virtualization (amd64) instead of TCG emulation.
	// Off by default: where /dev/kvm exists but fails, TCG still works.
	KVM bool
}

// VM is a running QEMU.
type VM struct {
	Ports      map[int]int // guest port -> host port on 127.0.0.1
	SerialLog  string      // path of the console log
	Disk       string      // path of the VM's disk
	DiskSize   int64
	Cmd        *exec.Cmd
	Started    time.Time
	done       chan struct{}
	waitErr    error
	cancelFunc context.CancelFunc
}

// Available reports whether QEMU (and for amd64 OVMF) for board can run.
func Available(board string) error {
	switch board {
	case "amd64":
		if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
			return errors.New("qemu-system-x86_64 not found (Debian package qemu-system-x86)")
		}
		if _, err := ovmf(); err != nil {
			return err
		}
	case "rpi":
		if _, err := exec.LookPath("qemu-system-aarch64"); err != nil {
			return errors.New("qemu-system-aarch64 not found (Debian package qemu-system-arm)")
		}
	default:
		return fmt.Errorf("vm: no QEMU machine for board %q", board)
	}
	return nil
}

func ovmf() ([2]string, error) {
	for _, p := range [][2]string{
		{"/usr/share/OVMF/OVMF_CODE_4M.fd", "/usr/share/OVMF/OVMF_VARS_4M.fd"},
		{"/usr/share/OVMF/OVMF_CODE.fd", "/usr/share/OVMF/OVMF_VARS.fd"},
	} {
		if _, err := os.Stat(p[0]); err == nil {
			if _, err := os.Stat(p[1]); err == nil {
				return p, nil
			}
		}
	}
	return [2]string{}, errors.New("OVMF firmware not found in /usr/share/OVMF (Debian package ovmf)")
}

// FreePort returns a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start copies the image and starts QEMU. Stop it with Stop.
func Start(o Options) (*VM, error) {
	if err := Available(o.Board); err != nil {
		return nil, err
	}
	if o.Memory == "" {
		o.Memory = "1024"
	}
	if len(o.GuestPorts) == 0 {
		o.GuestPorts = []int{80, 443, 8080, 8443}
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	st, err := os.Stat(o.Image)
	if err != nil {
		return nil, err
	}
	size := o.DiskSize
	if size == 0 {
		size = st.Size()
	}
	if size < st.Size() {
		return nil, fmt.Errorf("vm: disk size %d is smaller than the image (%d)", size, st.Size())
	}
	if o.Board == "rpi" {
		// QEMU's SD card model wants a power-of-two size.
		p := int64(1)
		for p < size {
			p <<= 1
		}
		size = p
	}
	disk := filepath.Join(o.Dir, "disk.img")
	if err := CopySparse(o.Image, disk, size); err != nil {
		return nil, err
	}
	v := &VM{Ports: map[int]int{}, SerialLog: filepath.Join(o.Dir, "serial.log"), Disk: disk, DiskSize: size, done: make(chan struct{})}
	var fwd []string
	for _, gp := range o.GuestPorts {
		hp, err := FreePort()
		if err != nil {
			return nil, err
		}
		v.Ports[gp] = hp
		fwd = append(fwd, fmt.Sprintf("hostfwd=tcp:127.0.0.1:%d-:%d", hp, gp))
	}
	var args []string
	var bin string
	switch o.Board {
	case "amd64":
		bin = "qemu-system-x86_64"
		fw, _ := ovmf()
		vars := filepath.Join(o.Dir, "OVMF_VARS.fd")
		if err := CopySparse(fw[1], vars, 0); err != nil {
			return nil, err
		}
		accel := "tcg"
		if o.KVM {
			accel = "kvm"
		}
		args = []string{
			"-machine", "q35", "-accel", accel, "-m", o.Memory, "-smp", "2",
			"-drive", "if=pflash,format=raw,unit=0,readonly=on,file=" + fw[0],
			"-drive", "if=pflash,format=raw,unit=1,file=" + vars,
			"-drive", "file=" + disk + ",format=raw,if=virtio",
			"-nic", "user,model=virtio-net-pci," + strings.Join(fwd, ","),
			"-device", "i6300esb", "-action", "watchdog=reset",
			"-display", "none", "-serial", "file:" + v.SerialLog, "-monitor", "none",
		}
	case "rpi":
		bin = "qemu-system-aarch64"
		f, err := os.Open(o.Image)
		if err != nil {
			return nil, err
		}
		t, err := partition.Read(f)
		f.Close()
		if err != nil {
			return nil, err
		}
		p1, _ := t.Entry(partition.Boot)
		cmdline := "earlycon=pl011,0x3f201000 console=ttyS0,115200 root=PARTUUID=" + p1.GUID.String() +
			"/PARTNROFF=1 init=/gokrazy/init rootwait panic=10 oops=panic" +
			" initcall_blacklist=bcm2835_wdt_driver_init,vchiq_driver_init arka.netif=usb0"
		args = []string{
			"-M", "raspi3b", "-m", "1G",
			"-kernel", filepath.Join(o.KernelDir, "vmlinuz"),
			"-dtb", filepath.Join(o.KernelDir, "bcm2710-rpi-3-b.dtb"),
			"-append", cmdline,
			"-drive", "if=sd,format=raw,file=" + disk,
			"-netdev", "user,id=n0," + strings.Join(fwd, ","), "-device", "usb-net,netdev=n0",
			"-display", "none", "-serial", "file:" + filepath.Join(o.Dir, "pl011.log"),
			"-serial", "file:" + v.SerialLog, "-monitor", "none",
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	v.cancelFunc = cancel
	v.Cmd = exec.CommandContext(ctx, bin, args...)
	v.Cmd.Stdout, v.Cmd.Stderr = o.Stdout, o.Stdout
	v.Started = time.Now()
	if err := v.Cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	go func() {
		v.waitErr = v.Cmd.Wait()
		close(v.done)
	}()
	return v, nil
}

// Done is closed when QEMU has exited.
func (v *VM) Done() <-chan struct{} { return v.done }

// Err is QEMU's exit error, valid after Done.
func (v *VM) Err() error { return v.waitErr }

// Stop kills QEMU and waits for it.
func (v *VM) Stop() {
	v.cancelFunc()
	<-v.done
}

// SerialTail returns the last n bytes of the console log.
func (v *VM) SerialTail(n int64) string {
	b, err := os.ReadFile(v.SerialLog)
	if err != nil {
		return err.Error()
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return string(b)
}

// CopySparse copies src to dst, skipping all-zero blocks (dst stays sparse),
// and sets dst's size to size (0: src's size).
func CopySparse(src, dst string, size int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	buf := make([]byte, 1<<20)
	var off int64
	for {
		n, err := io.ReadFull(in, buf)
		if n > 0 {
			if !allZero(buf[:n]) {
				if _, werr := out.WriteAt(buf[:n], off); werr != nil {
					return werr
				}
			}
			off += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if size == 0 {
		size = off
	}
	if err := out.Truncate(size); err != nil {
		return err
	}
	return out.Close()
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
