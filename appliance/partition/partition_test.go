package partition

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The documented example (shared/design/gokrazy-image.md §1.1): hostname
// gkproto hashes to 202db793.
func TestGUIDScheme(t *testing.T) {
	if h := HostHash("gkproto"); h != 0x202db793 {
		t.Fatalf("HostHash(gkproto) = %08x, want 202db793", h)
	}
	if g := PartitionGUID(0x202db793, 1).String(); g != "60c24cc1-f3f9-427a-8199-202db7930001" {
		t.Fatalf("partition 1 GUID = %s", g)
	}
	if g := PartitionGUID(0x202db793, 0).String(); g != "60c24cc1-f3f9-427a-8199-202db7930000" {
		t.Fatalf("disk GUID = %s", g)
	}
	// Mixed-endian on disk: the first field is little-endian.
	b := MustParseGUID("C12A7328-F81F-11D2-BA4B-00A0C93EC93B").onDisk()
	if !bytes.Equal(b[:8], []byte{0x28, 0x73, 0x2A, 0xC1, 0x1F, 0xF8, 0xD2, 0x11}) {
		t.Fatalf("EFI System type on disk: % x", b[:8])
	}
}

func writeTable(t *testing.T, n uint64) (string, Table) {
	t.Helper()
	tab, err := Layout(n, "gkproto", TypeRootAMD64)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(int64(n) * SectorSize); err != nil {
		t.Fatal(err)
	}
	if err := Write(f, tab); err != nil {
		t.Fatal(err)
	}
	return p, tab
}

// TestLayout checks offsets, sizes, types and the hybrid MBR against the
// documented scheme (§1, §1.2).
func TestLayout(t *testing.T) {
	const n = 2457600 // 1200 MiB
	p, _ := writeTable(t, n)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		first, last uint64
		typ         GUID
	}{
		{8192, 8192 + 204800 - 1, TypeEFISystem},
		{212992, 212992 + 1024000 - 1, TypeRootAMD64},
		{1236992, 1236992 + 1024000 - 1, TypeLinuxData},
		{2260992, n - 35, TypeLinuxData},
	}
	if len(got.Entries) != 4 {
		t.Fatalf("%d entries", len(got.Entries))
	}
	for i, w := range want {
		e := got.Entries[i]
		if e.Number != i+1 || e.FirstLBA != w.first || e.LastLBA != w.last || e.Type != w.typ || e.GUID != PartitionGUID(0x202db793, i+1) {
			t.Errorf("partition %d: %+v, want %d-%d type %s", i+1, e, w.first, w.last, w.typ)
		}
	}
	if s := got.Entries[3].Sectors(); s != n-2261026 {
		t.Errorf("perm size %d, want N-2261026 = %d", s, n-2261026)
	}
	if got.DiskGUID != PartitionGUID(0x202db793, 0) || got.DiskSectors != n {
		t.Errorf("disk GUID %s, sectors %d", got.DiskGUID, got.DiskSectors)
	}
	mbr := make([]byte, 512)
	f.ReadAt(mbr, 0)
	wantMBR := map[int]byte{440: 0x93, 441: 0xb7, 442: 0x2d, 443: 0x20, 446: 0x80, 450: 0x0C, 462: 0x00, 466: 0xEE, 510: 0x55, 511: 0xAA}
	for off, b := range wantMBR {
		if mbr[off] != b {
			t.Errorf("MBR byte %d = %#x, want %#x", off, mbr[off], b)
		}
	}
	if !bytes.Equal(mbr[454:462], []byte{0x00, 0x20, 0, 0, 0x00, 0x20, 0x03, 0x00}) { // start 8192, size 204800
		t.Errorf("MBR entry 1 LBA/size: % x", mbr[454:462])
	}
	if !bytes.Equal(mbr[470:478], []byte{1, 0, 0, 0, 0xFF, 0x1F, 0, 0}) { // start 1, size 8191
		t.Errorf("MBR entry 2 LBA/size: % x", mbr[470:478])
	}
	// Backup header at the last sector, pointing back at LBA 1.
	last := make([]byte, 8)
	f.ReadAt(last, (n-1)*512)
	if !bytes.Equal(last, []byte("EFI PART")) {
		t.Error("no backup GPT header in the last sector")
	}
}

// TestSfdiskAgrees lets util-linux read the table.
func TestSfdiskAgrees(t *testing.T) {
	sfdisk, err := exec.LookPath("sfdisk")
	if err != nil {
		if _, err := os.Stat("/usr/sbin/sfdisk"); err != nil {
			t.Skip("sfdisk not installed (Debian package fdisk)")
		}
		sfdisk = "/usr/sbin/sfdisk"
	}
	p, _ := writeTable(t, 2457600)
	out, err := exec.Command(sfdisk, "--verify", p).CombinedOutput()
	if err != nil {
		t.Fatalf("sfdisk --verify: %v\n%s", err, out)
	}
	out, err = exec.Command(sfdisk, "--dump", p).CombinedOutput()
	if err != nil {
		t.Fatalf("sfdisk --dump: %v\n%s", err, out)
	}
	for _, want := range []string{
		"label-id: 60C24CC1-F3F9-427A-8199-202DB7930000",
		"start=        8192, size=      204800, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, uuid=60C24CC1-F3F9-427A-8199-202DB7930001",
		"start=      212992, size=     1024000, type=4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709, uuid=60C24CC1-F3F9-427A-8199-202DB7930002",
		"start=     2260992, size=      196574, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, uuid=60C24CC1-F3F9-427A-8199-202DB7930004",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("sfdisk --dump lacks %q:\n%s", want, out)
		}
	}
}

func TestGrowPerm(t *testing.T) {
	const n, bigger = 2457600, 8388608 // 1200 MiB -> 4 GiB
	p, tab := writeTable(t, n)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(bigger * SectorSize); err != nil {
		t.Fatal(err)
	}
	grown, err := GrowPerm(f, tab, bigger)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	p4, _ := got.Entry(Perm)
	if p4.FirstLBA != PermStart || p4.LastLBA != bigger-35 || got.DiskSectors != bigger {
		t.Errorf("after growing: perm %d-%d, disk %d", p4.FirstLBA, p4.LastLBA, got.DiskSectors)
	}
	if g4, _ := grown.Entry(Perm); g4 != p4 {
		t.Errorf("returned table %+v differs from the one on disk %+v", g4, p4)
	}
	old := make([]byte, 8)
	f.ReadAt(old, (n-1)*SectorSize)
	if bytes.Equal(old, []byte("EFI PART")) {
		t.Error("the old backup header is still there")
	}
	if _, err := GrowPerm(f, got, bigger); err == nil {
		t.Error("growing to the same size should fail")
	}
	if out, err := exec.Command("sfdisk", "--verify", p).CombinedOutput(); err == nil && !bytes.Contains(out, []byte("No errors detected")) {
		t.Errorf("sfdisk --verify after growing:\n%s", out)
	}
}

func TestLayoutTooSmall(t *testing.T) {
	if _, err := Layout(MinDiskSectors-1, "x", TypeRootARM64); err == nil {
		t.Fatal("a disk below 1100 MiB was accepted")
	}
}
