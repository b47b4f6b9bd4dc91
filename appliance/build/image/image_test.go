package image

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/arkaweb/arka/appliance/fat16"
	"github.com/arkaweb/arka/appliance/initcfg"
	"github.com/arkaweb/arka/appliance/partition"
)

const testEpoch = 1764441516

func testConfig(t *testing.T, board, out, pwFile string) Config {
	t.Helper()
	root, err := findModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	bd, err := LoadBoard(board)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckTools(bd); err != nil {
		t.Skip(err)
	}
	return Config{Board: bd, Output: out, ModuleDir: root, Version: "test", PasswordFile: pwFile, SourceDateEpoch: testEpoch}
}

var (
	amd64Once sync.Once
	amd64Img  string
	amd64Sum  *Summary
	amd64Err  error
	amd64Dir  string
)

// builtAmd64 builds one amd64 image shared by the tests of this package.
func builtAmd64(t *testing.T) (string, *Summary) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds an image: skipped with -short")
	}
	amd64Once.Do(func() {
		amd64Dir, amd64Err = os.MkdirTemp("", "arka-image-test-")
		if amd64Err != nil {
			return
		}
		amd64Img = filepath.Join(amd64Dir, "a", "arka-amd64.img")
		amd64Sum, amd64Err = Build(testConfig(t, "amd64", amd64Img, filepath.Join(amd64Dir, "pw.txt")))
	})
	if amd64Err != nil {
		t.Fatal(amd64Err)
	}
	return amd64Img, amd64Sum
}

func TestMain(m *testing.M) {
	code := m.Run()
	if amd64Dir != "" {
		os.RemoveAll(amd64Dir)
	}
	os.Exit(code)
}

// TestPartitionsMatchScheme reads the built image's partition table and
// compares offsets, sizes and GUIDs with the documented scheme.
func TestPartitionsMatchScheme(t *testing.T) {
	img, _ := builtAmd64(t)
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := partition.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := partition.Layout(DefaultSize/512, "arka", partition.TypeRootAMD64)
	if len(got.Entries) != 4 {
		t.Fatalf("%d partitions", len(got.Entries))
	}
	h := partition.HostHash("arka")
	for i, e := range got.Entries {
		if e != want.Entries[i] {
			t.Errorf("partition %d: %+v, want %+v", i+1, e, want.Entries[i])
		}
		if e.GUID != partition.PartitionGUID(h, i+1) {
			t.Errorf("partition %d GUID %s", i+1, e.GUID)
		}
	}
	if got.Signature != h {
		t.Errorf("MBR signature %08x, want %08x", got.Signature, h)
	}
}

// section returns a reader over partition n of img.
func section(t *testing.T, img string, n int) (*io.SectionReader, partition.Entry) {
	t.Helper()
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	tab, err := partition.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := tab.Entry(n)
	return io.NewSectionReader(f, e.Offset(), e.Size()), e
}

// TestBootReadLikeGokrazyInit reads the boot FAT16 back the way gokrazy's
// init does (§3.3) and finds cmdline.txt and loader/entries/gokrazy.conf,
// with the command line pointing at root A by PARTUUID.
func TestBootReadLikeGokrazyInit(t *testing.T) {
	img, sum := builtAmd64(t)
	boot, p1 := section(t, img, partition.Boot)
	read := func(path string) []byte {
		off, n, err := fat16.Extents(boot, path)
		if err != nil {
			t.Fatalf("gokrazy's reader cannot find %s: %v", path, err)
		}
		b := make([]byte, n)
		if _, err := boot.ReadAt(b, off); err != nil {
			t.Fatal(err)
		}
		return b
	}
	cmdline := read("/cmdline.txt")
	if !bytes.Equal(cmdline, CmdlineFile(sum.Cmdline)) {
		t.Errorf("cmdline.txt = %q", cmdline)
	}
	if !bytes.Contains(cmdline, []byte("root=PARTUUID="+p1.GUID.String()+"/PARTNROFF=1 ")) ||
		!bytes.Contains(cmdline, []byte("init=/gokrazy/init")) || !bytes.Contains(cmdline, []byte(" rootwait")) {
		t.Errorf("cmdline.txt lacks root=, init= or rootwait: %q", cmdline)
	}
	if !bytes.HasSuffix(cmdline, []byte("\n"+strings.Repeat(" ", CmdlinePadding))) || len(cmdline) >= 512 {
		t.Errorf("cmdline.txt must end in a newline plus %d spaces and stay under one sector: %q", CmdlinePadding, cmdline)
	}
	conf := read("/loader/entries/gokrazy.conf")
	if !bytes.Equal(conf, LoaderEntry(sum.Cmdline)) || !bytes.Contains(conf, []byte("\rlinux /vmlinuz\roptions "+sum.Cmdline+"\n")) {
		t.Errorf("gokrazy.conf = %q", conf)
	}
	kernel := read("/vmlinuz")
	if len(kernel) < 1<<20 || string(kernel[0x202:0x206]) != "HdrS" {
		t.Errorf("vmlinuz is not a bzImage (%d bytes)", len(kernel))
	}
	efi := read("/EFI/BOOT/BOOTX64.EFI")
	if string(efi[:2]) != "MZ" {
		t.Error("BOOTX64.EFI is not a PE file")
	}
}

// TestRootContents lists the SquashFS with unsquashfs and checks the files
// gokrazy and Arka need, with their modes.
func TestRootContents(t *testing.T) {
	img, sum := builtAmd64(t)
	unsq, err := exec.LookPath("unsquashfs")
	if err != nil {
		t.Skip("unsquashfs not installed (squashfs-tools)")
	}
	root, _ := section(t, img, partition.RootA)
	sb := make([]byte, 96)
	root.ReadAt(sb, 0)
	if string(sb[:4]) != "hsqs" || binary.LittleEndian.Uint16(sb[20:]) != 1 { // compression 1 = gzip
		t.Fatalf("root A is not a gzip SquashFS: % x", sb[:24])
	}
	used := int64(binary.LittleEndian.Uint64(sb[40:]))
	sq := filepath.Join(t.TempDir(), "root.sqfs")
	out, _ := os.Create(sq)
	io.Copy(out, io.NewSectionReader(root, 0, used))
	out.Close()
	list, err := exec.Command(unsq, "-lln", "-d", "", sq).CombinedOutput()
	if err != nil {
		t.Fatalf("unsquashfs: %v\n%s", err, list)
	}
	for _, want := range []string{
		"-rwxr-xr-x 0/0 .* /gokrazy/init$",
		"-rwxr-xr-x 0/0 .* /gokrazy/dhcp$",
		"-rwxr-xr-x 0/0 .* /gokrazy/ntp$",
		"-rwxr-xr-x 0/0 .* /gokrazy/randomd$",
		"-rwxr-xr-x 0/0 .* /usr/lib/arka/arka$",
		"lrwxrwxrwx 0/0 .* /user/arka -> /gokrazy/init$",
		"-r-------- 0/0 .* /etc/gokr-pw.txt$",
		"-rw-r--r-- 0/0 .* /etc/http-port.txt$",
		"-rw-r--r-- 0/0 .* /etc/ssl/ca-bundle.pem$",
		"-rw-r--r-- 0/0 .* /etc/localtime$",
		"-rw-r--r-- 0/0 .* /etc/hostname$",
		"-rw-r--r-- 0/0 .* /etc/arka/sites/default.toml$",
		"-rw-r--r-- 0/0 .* /etc/arka/www/index.html$",
		"-rw-r--r-- 0/0 .* /etc/arka/init.json$",
		"lrwxrwxrwx 0/0 .* /var -> /perm/var$",
		"drwxr-xr-x 0/0 .* /perm$",
	} {
		if !regexpMatch(want, string(list)) {
			t.Errorf("root lacks %q", want)
		}
	}
	// The password file next to the image is private.
	st, err := os.Stat(sum.PasswordFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("password file %s: %v, mode %v", sum.PasswordFile, err, st.Mode())
	}
	// The service table arka-init reads.
	cfg, err := (&Config{}).initConfig().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cfg, []byte(initcfg.Sites)) || !bytes.Contains(cfg, []byte("/user/arka")) {
		t.Errorf("init.json: %s", cfg)
	}
}

// TestPermFormatted checks that partition 4 holds an ext4 file system.
func TestPermFormatted(t *testing.T) {
	img, _ := builtAmd64(t)
	perm, _ := section(t, img, partition.Perm)
	sb := make([]byte, 1024)
	perm.ReadAt(sb, 1024)
	if binary.LittleEndian.Uint16(sb[0x38:]) != 0xEF53 {
		t.Fatal("perm holds no ext4 superblock")
	}
	if string(bytes.TrimRight(sb[0x78:0x88], "\x00")) != "perm" {
		t.Errorf("perm label %q", sb[0x78:0x88])
	}
	if bs := 1024 << binary.LittleEndian.Uint32(sb[0x18:]); bs != 4096 {
		t.Errorf("perm block size %d, want 4096", bs)
	}
}

// TestReproducible builds the image a second time from the same inputs
// (same SOURCE_DATE_EPOCH, same password file) and compares bytes.
func TestReproducible(t *testing.T) {
	img, sum := builtAmd64(t)
	second := filepath.Join(t.TempDir(), "b", "arka-amd64.img")
	if _, err := Build(testConfig(t, "amd64", second, sum.PasswordFile)); err != nil {
		t.Fatal(err)
	}
	a, b := fileHash(t, img), fileHash(t, second)
	if a != b {
		t.Fatalf("two builds from the same inputs differ: %x vs %x", a, b)
	}
}

func fileHash(t *testing.T, p string) [32]byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}

func regexpMatch(pattern, s string) bool {
	return regexp.MustCompile("(?m)" + pattern).MatchString(s)
}
