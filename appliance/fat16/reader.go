package fat16

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// Extents finds path in a FAT16 volume the way gokrazy's running init does,
// so a test can prove that init will
// find and edit cmdline.txt and loader/entries/gokrazy.conf in place:
//
//   - geometry comes from the 16-bit BPB fields only (sectors per FAT at
//     offset 22, root entries at offset 17); the number of FATs is ignored,
//     so the root directory is taken to start right after ONE FAT;
//   - every directory, subdirectories included, is scanned for exactly
//     "root entries" 32-byte slots from its first cluster; cluster chains
//     are never followed; long-name slots are not understood;
//   - a stored 8.3 name "NAME[.EXT]" matches a path component if it equals,
//     ignoring case, the component's own 8.3 conversion (upper case, ~1
//     tail; an extension-less component converts to "NAME." and so never
//     matches), or if it equals the component exactly.
//
// It returns the byte offset and length of the file's first (and, for files
// written by Write, only) run of data.
func Extents(r io.ReaderAt, path string) (offset, length int64, err error) {
	bpb := make([]byte, 24)
	if _, err := r.ReadAt(bpb, 0); err != nil {
		return 0, 0, err
	}
	bytesPerSector := int64(binary.LittleEndian.Uint16(bpb[11:]))
	sectorsPerCluster := int64(bpb[13])
	reserved := int64(binary.LittleEndian.Uint16(bpb[14:]))
	rootEntries := int(binary.LittleEndian.Uint16(bpb[17:]))
	fatSectors := int64(binary.LittleEndian.Uint16(bpb[22:]))

	dirOff := (reserved + fatSectors) * bytesPerSector
	rootBytes := int64(rootEntries) * 32
	dataOff := dirOff + (rootBytes+bytesPerSector-1)/bytesPerSector*bytesPerSector

	components := strings.Split(strings.TrimPrefix(path, "/"), "/")
	e := make([]byte, 32)
	for ci, comp := range components {
		want := readerShortName(comp)
		found := false
		for i := 0; i < rootEntries; i++ {
			if _, err := r.ReadAt(e, dirOff+int64(i)*32); err != nil {
				return 0, 0, err
			}
			if e[0] == 0 {
				continue
			}
			name := string(e[0:8])
			if j := strings.IndexByte(name, ' '); j >= 0 {
				name = name[:j]
			}
			if e[8] != ' ' {
				name += "." + string(e[8:11])
			}
			if !strings.EqualFold(name, want) && name != comp {
				continue
			}
			cluster := int64(binary.LittleEndian.Uint16(e[26:]))
			off := dataOff + (cluster-2)*sectorsPerCluster*bytesPerSector
			if e[11] == attrDirectory {
				if ci == len(components)-1 {
					return 0, 0, fmt.Errorf("%q is a directory", path)
				}
				dirOff = off
				found = true
				break
			}
			return off, int64(binary.LittleEndian.Uint32(e[28:])), nil
		}
		if !found {
			break
		}
	}
	return 0, 0, fmt.Errorf("%q not found", path)
}

// readerShortName is the reader's own 8.3 conversion of a path component.
func readerShortName(comp string) string {
	basis := strings.ReplaceAll(strings.ToUpper(comp), " ", "")
	basis = strings.TrimLeft(basis, ".")
	primary, ext := basis, ""
	if i := strings.LastIndex(basis, "."); i >= 0 {
		primary, ext = basis[:i], basis[i+1:]
	}
	if len(primary) > 8 || len(ext) > 3 {
		if len(ext) > 3 {
			ext = ext[:3]
		}
		if len(primary) > 6 {
			primary = primary[:6]
		}
		primary += "~1"
	}
	// An extension-less component still gets a "." (with a blank
	// extension), which is why such names must be stored exactly.
	return primary + "." + ext
}
