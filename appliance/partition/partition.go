// Package partition writes and reads the partition table of an Arka disk:
// a GUID Partition Table (UEFI 2.10 §5.3) plus gokrazy's hybrid MBR in LBA 0,
// with the fixed gokrazy layout (boot, root A, root B, perm).
//
// Layout (512-byte sectors):
//
//	#  role    first LBA  sectors      type
//	1  boot       8192     204800      EFI System (FAT16)
//	2  root A   212992    1024000      arch root (SquashFS)
//	3  root B  1236992    1024000      Linux data (SquashFS)
//	4  perm    2260992    N-2261026    Linux data (ext4), ends at N-35
//
// Partition and disk GUIDs derive from the hostname (FNV-1a), so the running
// gokrazy init finds its disk by PARTUUID.
package partition

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"strings"
	"unicode/utf16"
)

// SectorSize is the logical sector size in bytes.
const SectorSize = 512

// Fixed gokrazy layout, in sectors.
const (
	BootStart   = 8192
	BootSectors = 204800  // 100 MiB
	RootSectors = 1024000 // 500 MiB each
	RootAStart  = BootStart + BootSectors
	RootBStart  = RootAStart + RootSectors
	PermStart   = RootBStart + RootSectors // 2260992

	// entriesSectors is the size of one GPT entry array: 128 entries of 128 bytes.
	entriesSectors = 32
	numEntries     = 128
	entrySize      = 128
	headerSize     = 92
)

// MinDiskSectors is the smallest disk the layout accepts: 1100 MiB, as gok.
const MinDiskSectors = 1100 * 1024 * 1024 / SectorSize

// Partition numbers (1-based, as in /dev/sda1).
const (
	Boot  = 1
	RootA = 2
	RootB = 3
	Perm  = 4
)

// Well-known partition type GUIDs (UEFI spec, Discoverable Partitions Spec).
var (
	TypeEFISystem = MustParseGUID("C12A7328-F81F-11D2-BA4B-00A0C93EC93B")
	TypeLinuxData = MustParseGUID("0FC63DAF-8483-4772-8E79-3D69D8477DE4")
	TypeRootAMD64 = MustParseGUID("4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709")
	TypeRootARM64 = MustParseGUID("B921B045-1DF0-41C3-AF44-4C6F280D3FAE")
)

// GUID is a GUID in its textual byte order (as printed, big-endian fields).
// On disk GPT stores the first three fields little-endian ("mixed-endian").
type GUID [16]byte

// ParseGUID parses the canonical 8-4-4-4-12 hex form.
func ParseGUID(s string) (GUID, error) {
	var g GUID
	h := strings.ReplaceAll(s, "-", "")
	if len(h) != 32 || len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return g, fmt.Errorf("partition: malformed GUID %q", s)
	}
	if _, err := hex.Decode(g[:], []byte(h)); err != nil {
		return g, fmt.Errorf("partition: malformed GUID %q: %v", s, err)
	}
	return g, nil
}

// MustParseGUID is ParseGUID for constants; it panics on a malformed string.
func MustParseGUID(s string) GUID {
	g, err := ParseGUID(s)
	if err != nil {
		panic(err)
	}
	return g
}

func (g GUID) String() string {
	h := hex.EncodeToString(g[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// onDisk returns the mixed-endian GPT encoding.
func (g GUID) onDisk() [16]byte {
	var b [16]byte
	b[0], b[1], b[2], b[3] = g[3], g[2], g[1], g[0]
	b[4], b[5] = g[5], g[4]
	b[6], b[7] = g[7], g[6]
	copy(b[8:], g[8:])
	return b
}

func guidFromDisk(b []byte) GUID {
	var g GUID
	g[0], g[1], g[2], g[3] = b[3], b[2], b[1], b[0]
	g[4], g[5] = b[5], b[4]
	g[6], g[7] = b[7], b[6]
	copy(g[8:], b[8:16])
	return g
}

// HostHash is gokrazy's 32-bit FNV-1a hash of the hostname; it is the MBR
// disk signature and part of every partition GUID.
func HostHash(hostname string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(hostname))
	return h.Sum32()
}

// PartitionGUID returns gokrazy's GUID for partition n (1-4) of a disk whose
// hostname hash is hash; n = 0 gives the disk GUID:
// 60c24cc1-f3f9-427a-8199-<hash8>00<nn>.
func PartitionGUID(hash uint32, n int) GUID {
	return MustParseGUID(fmt.Sprintf("60c24cc1-f3f9-427a-8199-%08x00%02x", hash, n))
}

// Entry is one partition of the layout.
type Entry struct {
	Number   int // 1-based
	Type     GUID
	GUID     GUID
	FirstLBA uint64
	LastLBA  uint64 // inclusive
	Name     string
}

// Sectors is the partition size in sectors.
func (e Entry) Sectors() uint64 { return e.LastLBA - e.FirstLBA + 1 }

// Offset is the partition's byte offset on the disk.
func (e Entry) Offset() int64 { return int64(e.FirstLBA) * SectorSize }

// Size is the partition size in bytes.
func (e Entry) Size() int64 { return int64(e.Sectors()) * SectorSize }

// Table is a GPT as written by Write or read by Read.
type Table struct {
	DiskSectors uint64 // total sectors N of the disk the table was made for
	DiskGUID    GUID
	Signature   uint32 // MBR disk signature (HostHash)
	Entries     []Entry
}

// Layout returns the gokrazy layout for a disk of n sectors with the given
// hostname; rootType is the arch root type GUID of partition 2.
func Layout(n uint64, hostname string, rootType GUID) (Table, error) {
	if n < MinDiskSectors {
		return Table{}, fmt.Errorf("partition: disk of %d MiB is too small: the layout needs at least %d MiB", n*SectorSize>>20, MinDiskSectors*SectorSize>>20)
	}
	h := HostHash(hostname)
	return Table{
		DiskSectors: n,
		DiskGUID:    PartitionGUID(h, 0),
		Signature:   h,
		Entries: []Entry{
			{Boot, TypeEFISystem, PartitionGUID(h, Boot), BootStart, BootStart + BootSectors - 1, "Microsoft basic data"},
			{RootA, rootType, PartitionGUID(h, RootA), RootAStart, RootAStart + RootSectors - 1, "Linux filesystem"},
			{RootB, TypeLinuxData, PartitionGUID(h, RootB), RootBStart, RootBStart + RootSectors - 1, "Linux filesystem"},
			{Perm, TypeLinuxData, PartitionGUID(h, Perm), PermStart, PermLastLBA(n), "Linux filesystem"},
		},
	}, nil
}

// PermLastLBA is the last sector of perm on a disk of n sectors: N-35, which
// leaves the backup GPT (33 sectors) and one spare sector, as gok does.
func PermLastLBA(n uint64) uint64 { return n - 35 }

// Write writes the hybrid MBR (LBA 0), the primary GPT (LBA 1-33) and the
// backup GPT (LBA N-33..N-1) for t onto w, which must be t.DiskSectors long.
func Write(w io.WriterAt, t Table) error {
	if _, err := w.WriteAt(hybridMBR(t), 0); err != nil {
		return err
	}
	return writeGPT(w, t)
}

func writeGPT(w io.WriterAt, t Table) error {
	n := t.DiskSectors
	entries := make([]byte, entriesSectors*SectorSize)
	for _, e := range t.Entries {
		if e.Number < 1 || e.Number > numEntries {
			return fmt.Errorf("partition: bad partition number %d", e.Number)
		}
		b := entries[(e.Number-1)*entrySize : e.Number*entrySize]
		ty, id := e.Type.onDisk(), e.GUID.onDisk()
		copy(b[0:16], ty[:])
		copy(b[16:32], id[:])
		binary.LittleEndian.PutUint64(b[32:], e.FirstLBA)
		binary.LittleEndian.PutUint64(b[40:], e.LastLBA)
		for i, c := range utf16.Encode([]rune(e.Name)) {
			if i >= 36 {
				break
			}
			binary.LittleEndian.PutUint16(b[56+2*i:], c)
		}
	}
	entriesCRC := crc32.ChecksumIEEE(entries)
	header := func(my, alt, entriesLBA uint64) []byte {
		h := make([]byte, SectorSize)
		copy(h, "EFI PART")
		binary.LittleEndian.PutUint32(h[8:], 0x00010000)
		binary.LittleEndian.PutUint32(h[12:], headerSize)
		binary.LittleEndian.PutUint64(h[24:], my)
		binary.LittleEndian.PutUint64(h[32:], alt)
		binary.LittleEndian.PutUint64(h[40:], 34)
		binary.LittleEndian.PutUint64(h[48:], n-34)
		dg := t.DiskGUID.onDisk()
		copy(h[56:72], dg[:])
		binary.LittleEndian.PutUint64(h[72:], entriesLBA)
		binary.LittleEndian.PutUint32(h[80:], numEntries)
		binary.LittleEndian.PutUint32(h[84:], entrySize)
		binary.LittleEndian.PutUint32(h[88:], entriesCRC)
		binary.LittleEndian.PutUint32(h[16:], crc32.ChecksumIEEE(h[:headerSize]))
		return h
	}
	writes := []struct {
		lba  uint64
		data []byte
	}{
		{1, header(1, n-1, 2)},
		{2, entries},
		{n - 33, entries},
		{n - 1, header(n-1, 1, n-33)},
	}
	for _, wr := range writes {
		if _, err := w.WriteAt(wr.data, int64(wr.lba)*SectorSize); err != nil {
			return err
		}
	}
	return nil
}

// hybridMBR builds LBA 0 as gokrazy does (§1.2): entry 1 is the boot FAT
// (active, type 0x0C, which the Raspberry Pi boot ROM needs), entry 2 a
// protective 0xEE entry covering LBA 1 up to the boot partition.
func hybridMBR(t Table) []byte {
	b := make([]byte, SectorSize)
	binary.LittleEndian.PutUint32(b[440:], t.Signature)
	entry := func(off int, status, typ byte, start, size uint32) {
		e := b[off : off+16]
		e[0] = status
		e[1], e[2], e[3] = 0xFE, 0xFF, 0xFF
		e[4] = typ
		e[5], e[6], e[7] = 0xFE, 0xFF, 0xFF
		binary.LittleEndian.PutUint32(e[8:], start)
		binary.LittleEndian.PutUint32(e[12:], size)
	}
	entry(446, 0x80, 0x0C, BootStart, BootSectors)
	entry(462, 0x00, 0xEE, 1, BootStart-1)
	b[510], b[511] = 0x55, 0xAA
	return b
}

// ErrNoGPT is returned by Read when LBA 1 holds no valid GPT header.
var ErrNoGPT = errors.New("partition: no valid GPT header at LBA 1")

// Read reads and checks the primary GPT of r (header and entry CRCs) and
// the MBR disk signature. DiskSectors is taken from the header's backup
// LBA (+1), that is, the size the table was written for.
func Read(r io.ReaderAt) (Table, error) {
	var t Table
	buf := make([]byte, 34*SectorSize)
	if _, err := r.ReadAt(buf, 0); err != nil {
		return t, fmt.Errorf("partition: reading the partition table: %w", err)
	}
	mbr, h := buf[:SectorSize], buf[SectorSize:2*SectorSize]
	if mbr[510] != 0x55 || mbr[511] != 0xAA {
		return t, errors.New("partition: no MBR boot signature in LBA 0")
	}
	if !bytes.Equal(h[:8], []byte("EFI PART")) {
		return t, ErrNoGPT
	}
	hs := binary.LittleEndian.Uint32(h[12:])
	if hs < headerSize || hs > SectorSize {
		return t, fmt.Errorf("partition: bad GPT header size %d", hs)
	}
	hc := make([]byte, hs)
	copy(hc, h[:hs])
	want := binary.LittleEndian.Uint32(hc[16:])
	binary.LittleEndian.PutUint32(hc[16:], 0)
	if crc32.ChecksumIEEE(hc) != want {
		return t, errors.New("partition: GPT header CRC mismatch")
	}
	if lba := binary.LittleEndian.Uint64(h[72:]); lba != 2 {
		return t, fmt.Errorf("partition: GPT entry array at LBA %d, gokrazy expects LBA 2", lba)
	}
	if binary.LittleEndian.Uint32(h[80:]) != numEntries || binary.LittleEndian.Uint32(h[84:]) != entrySize {
		return t, errors.New("partition: unexpected GPT entry count or size")
	}
	entries := buf[2*SectorSize:]
	if crc32.ChecksumIEEE(entries) != binary.LittleEndian.Uint32(h[88:]) {
		return t, errors.New("partition: GPT entry array CRC mismatch")
	}
	t.DiskSectors = binary.LittleEndian.Uint64(h[32:]) + 1
	t.DiskGUID = guidFromDisk(h[56:72])
	t.Signature = binary.LittleEndian.Uint32(mbr[440:])
	for i := 0; i < numEntries; i++ {
		b := entries[i*entrySize : (i+1)*entrySize]
		if bytes.Equal(b[0:16], make([]byte, 16)) {
			continue
		}
		var name []uint16
		for j := 0; j < 36; j++ {
			c := binary.LittleEndian.Uint16(b[56+2*j:])
			if c == 0 {
				break
			}
			name = append(name, c)
		}
		t.Entries = append(t.Entries, Entry{
			Number:   i + 1,
			Type:     guidFromDisk(b[0:16]),
			GUID:     guidFromDisk(b[16:32]),
			FirstLBA: binary.LittleEndian.Uint64(b[32:]),
			LastLBA:  binary.LittleEndian.Uint64(b[40:]),
			Name:     string(utf16.Decode(name)),
		})
	}
	return t, nil
}

// Entry returns the partition with number n.
func (t Table) Entry(n int) (Entry, bool) {
	for _, e := range t.Entries {
		if e.Number == n {
			return e, true
		}
	}
	return Entry{}, false
}

// GrowPerm rewrites the table of a disk that is now n sectors long (larger
// than t.DiskSectors) so that perm (partition 4, which must be last) ends at
// PermLastLBA(n): it writes the primary GPT, the backup GPT at the new end of
// the disk, and clears the old backup header. The MBR is left untouched (its
// entries do not cover perm). It returns the updated table.
func GrowPerm(rw io.WriterAt, t Table, n uint64) (Table, error) {
	if n <= t.DiskSectors {
		return t, fmt.Errorf("partition: disk of %d sectors is not larger than the table's %d", n, t.DiskSectors)
	}
	grown := t
	grown.Entries = append([]Entry(nil), t.Entries...)
	found := false
	for i, e := range grown.Entries {
		if e.Number == Perm {
			found = true
			grown.Entries[i].LastLBA = PermLastLBA(n)
		} else if e.LastLBA >= PermStart {
			return t, fmt.Errorf("partition: partition %d lies after perm; not growing", e.Number)
		}
	}
	if !found {
		return t, errors.New("partition: no perm partition (4) in the table")
	}
	grown.DiskSectors = n
	if err := writeGPT(rw, grown); err != nil {
		return t, err
	}
	// The old backup header now lies inside perm, beyond its file system.
	if _, err := rw.WriteAt(make([]byte, SectorSize), int64(t.DiskSectors-1)*SectorSize); err != nil {
		return t, err
	}
	return grown, nil
}
