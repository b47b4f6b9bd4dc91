package image

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/arkaweb/arka/appliance/fat16"
	"github.com/arkaweb/arka/appliance/partition"
)

// BuildInfoFile is the file in the boot partition's root that names the
// build (BuildInfo as JSON). It lets an update client tell, from the image
// alone, which build it is about to send and which SBOMHash gokrazy will
// report once that build runs; people looking at a card see it too.
const BuildInfoFile = "arka-build.json"

// BuildInfo identifies one image build.
type BuildInfo struct {
	Board          string `json:"board"`
	Version        string `json:"version"`         // Arka's version (server.Version)
	BuildTimestamp string `json:"build_timestamp"` // gokrazy's BuildTimestamp (RFC 3339)
	SBOMHash       string `json:"sbom_hash"`       // gokrazy's SBOMHash of the root file system
}

func (b BuildInfo) marshal() []byte {
	out, _ := json.MarshalIndent(b, "", "  ") // strings only: cannot fail
	return append(out, '\n')
}

// Sections locates the parts of a built image that an over-the-air update
// sends: the boot file system (partition 1, only the bytes the FAT16
// occupies) and the root file system (partition 2, only the bytes the
// SquashFS occupies, rounded up to 4 KiB as mksquashfs pads it).
type Sections struct {
	Boot, Root *io.SectionReader
	Build      BuildInfo
}

// OpenSections reads the partition table, the FAT16 boot sector, the
// SquashFS superblock and BuildInfoFile of the image in r.
func OpenSections(r io.ReaderAt) (*Sections, error) {
	t, err := partition.Read(r)
	if err != nil {
		return nil, err
	}
	p1, ok1 := t.Entry(partition.Boot)
	p2, ok2 := t.Entry(partition.RootA)
	if !ok1 || !ok2 {
		return nil, errors.New("image: no boot or root partition in the partition table")
	}
	bpb := make([]byte, 36)
	if _, err := r.ReadAt(bpb, p1.Offset()); err != nil {
		return nil, fmt.Errorf("image: boot sector: %v", err)
	}
	bytesPerSector := int64(binary.LittleEndian.Uint16(bpb[11:]))
	total := int64(binary.LittleEndian.Uint16(bpb[19:]))
	if total == 0 {
		total = int64(binary.LittleEndian.Uint32(bpb[32:]))
	}
	bootSize := total * bytesPerSector
	if bytesPerSector != 512 || bootSize <= 0 || bootSize > p1.Size() {
		return nil, fmt.Errorf("image: partition 1 holds no FAT16 of this builder (%d sectors of %d bytes)", total, bytesPerSector)
	}
	sb := make([]byte, 96)
	if _, err := r.ReadAt(sb, p2.Offset()); err != nil {
		return nil, fmt.Errorf("image: root superblock: %v", err)
	}
	if string(sb[:4]) != "hsqs" {
		return nil, errors.New("image: partition 2 holds no SquashFS")
	}
	used := int64(binary.LittleEndian.Uint64(sb[40:]))
	rootSize := (used + 4095) / 4096 * 4096
	if used <= 0 || rootSize > p2.Size() {
		return nil, fmt.Errorf("image: SquashFS in partition 2 claims %d bytes", used)
	}
	s := &Sections{
		Boot: io.NewSectionReader(r, p1.Offset(), bootSize),
		Root: io.NewSectionReader(r, p2.Offset(), rootSize),
	}
	off, n, err := fat16.Extents(s.Boot, "/"+BuildInfoFile)
	if err != nil {
		return nil, fmt.Errorf("image: %s: %v (built before over-the-air updates?)", BuildInfoFile, err)
	}
	b := make([]byte, n)
	if _, err := s.Boot.ReadAt(b, off); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &s.Build); err != nil {
		return nil, fmt.Errorf("image: %s: %v", BuildInfoFile, err)
	}
	return s, nil
}
