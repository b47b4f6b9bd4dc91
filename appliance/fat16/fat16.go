// Package fat16 writes the boot file system of an Arka image: FAT16 (the
// Microsoft FAT specification, "FAT16B") laid out the way gokrazy's running
// init can read and edit in place:
//
//   - exactly one FAT, 512-byte sectors, 4 sectors per cluster, 4 reserved
//     sectors (one cluster), media 0xF8, a fixed root directory rounded to
//     whole sectors, at least 4085 clusters (so it is FAT16, never FAT12);
//   - every file and directory stored in one contiguous run of clusters;
//   - 8.3 names: extension-less names that fit are stored exactly as given
//     (gokrazy's reader compares those case-sensitively, so "loader" must be
//     stored lower-case), other names upper-case with a numeric tail when
//     they do not fit; every entry whose 8.3 form differs from its name also
//     gets VFAT long-name entries;
//   - all timestamps are one fixed time, so the output is reproducible;
//   - the file system is only as large as its content plus a little room.
package fat16

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

const (
	sectorSize        = 512
	sectorsPerCluster = 4
	clusterSize       = sectorSize * sectorsPerCluster
	reservedSectors   = 4
	minClusters       = 4085 + 11 // FAT16 needs >= 4085; keep a margin from the edge
	maxClusters       = 65524
	spareClusters     = 256 // room for small edits (e.g. RECOVERY.000 renames)
	spareRootSlots    = 32  // free root directory entries (two sectors)

	attrDirectory = 0x10
	attrArchive   = 0x20
	attrLFN       = 0x0F
	attrVolumeID  = 0x08
)

// File is one file to store. Exactly one of Data and Source is used: Data
// when Source is empty.
type File struct {
	Path   string // slash-separated, relative to the root, e.g. "loader/entries/gokrazy.conf"
	Data   []byte
	Source string // host path to copy from
}

// Options control the file system header.
type Options struct {
	Label      string    // volume label, at most 11 bytes, e.g. "ARKA"
	VolumeID   uint32    // serial number
	ModTime    time.Time // every directory entry's time (FAT dates start in 1980)
	HiddenSecs uint32    // sectors before the volume (the partition's first LBA)
	MaxBytes   int64     // fail if the file system would be larger (the partition size); 0: no limit
}

type node struct {
	name     string
	dir      bool
	children map[string]*node
	file     File
	size     int64
	cluster  uint16 // first cluster
	clusters int
	entries  []byte // directory content (for dirs)
}

// Layout reports where things ended up, for tests and the image summary.
type Layout struct {
	TotalSectors    int
	FATSectors      int
	RootDirEntries  int
	Clusters        int
	UsedClusters    int
	FileExtents     map[string][2]int64 // path -> {offset, length} in bytes
	DataOffset      int64
	RootDirOffset   int64
	BytesPerCluster int
}

// Write builds the file system from files and writes it to w starting at
// offset 0. Directories are created as needed. Files are placed in sorted
// path order.
func Write(w io.WriterAt, files []File, opt Options) (*Layout, error) {
	root := &node{dir: true, children: map[string]*node{}}
	for _, f := range files {
		p := strings.Trim(path.Clean("/"+f.Path), "/")
		if p == "" {
			return nil, fmt.Errorf("fat16: empty file path")
		}
		parts := strings.Split(p, "/")
		cur := root
		for i, part := range parts {
			child, ok := cur.children[part]
			last := i == len(parts)-1
			if !ok {
				child = &node{name: part, dir: !last, children: map[string]*node{}}
				cur.children[part] = child
			} else if last || !child.dir {
				return nil, fmt.Errorf("fat16: %q is given twice or is both a file and a directory", f.Path)
			}
			cur = child
		}
		cur.file = f
		if f.Source != "" {
			st, err := os.Stat(f.Source)
			if err != nil {
				return nil, fmt.Errorf("fat16: %v", err)
			}
			cur.size = st.Size()
		} else {
			cur.size = int64(len(f.Data))
		}
		if cur.size > 0xFFFFFFFF {
			return nil, fmt.Errorf("fat16: %s is too large for FAT", f.Path)
		}
	}

	// Directory entries for every directory (sizes are needed before
	// clusters can be assigned; cluster numbers are patched in later).
	var dirs []*node // in allocation order, root first
	var order []*node
	var walk func(n *node)
	walk = func(n *node) {
		order = append(order, n)
		if n.dir {
			dirs = append(dirs, n)
			for _, name := range sortedNames(n) {
				walk(n.children[name])
			}
		}
	}
	walk(root)

	names := map[*node][11]byte{}
	for _, d := range dirs {
		seen := map[string]bool{}
		for _, name := range sortedNames(d) {
			short, err := shortName(name, seen)
			if err != nil {
				return nil, err
			}
			names[d.children[name]] = short
		}
	}

	// Root directory slots: LFN + short entries, rounded up to whole sectors.
	rootSlots := 0
	if opt.Label != "" {
		rootSlots++ // volume label entry
	}
	for _, name := range sortedNames(root) {
		rootSlots += slotsFor(name, names[root.children[name]])
	}
	// Plus free slots for files a person adds or an editor saves by
	// writing a new file and renaming it (settings.txt on a computer).
	rootSlots += spareRootSlots
	rootDirEntries := roundUp(max(rootSlots, 1), sectorSize/32)
	rootDirSectors := rootDirEntries * 32 / sectorSize

	// Assign clusters in walk order: each node gets a contiguous run.
	next := 2
	for _, n := range order {
		if n == root {
			continue
		}
		var size int64
		if n.dir {
			slots := 2 // "." and ".."
			for _, name := range sortedNames(n) {
				slots += slotsFor(name, names[n.children[name]])
			}
			size = int64(slots) * 32
		} else {
			size = n.size
		}
		n.clusters = int((size + clusterSize - 1) / clusterSize)
		if n.dir && n.clusters == 0 {
			n.clusters = 1
		}
		if n.clusters > 0 {
			n.cluster = uint16(next)
			next += n.clusters
		}
		if next-2 > maxClusters {
			return nil, errors.New("fat16: content does not fit in FAT16")
		}
	}
	used := next - 2
	clusters := max(used+spareClusters, minClusters)
	if clusters > maxClusters {
		clusters = maxClusters
	}
	fatSectors := (2*(clusters+2) + sectorSize - 1) / sectorSize
	total := reservedSectors + fatSectors + rootDirSectors + clusters*sectorsPerCluster
	if opt.MaxBytes > 0 && int64(total)*sectorSize > opt.MaxBytes {
		return nil, fmt.Errorf("fat16: file system needs %d bytes, the partition holds %d", int64(total)*sectorSize, opt.MaxBytes)
	}
	rootDirOff := int64(reservedSectors+fatSectors) * sectorSize
	dataOff := rootDirOff + int64(rootDirSectors)*sectorSize
	clusterOff := func(c uint16) int64 { return dataOff + (int64(c)-2)*clusterSize }

	t, d := fatTime(opt.ModTime)

	// Directory contents.
	for _, dir := range dirs {
		var buf []byte
		if dir == root && opt.Label != "" {
			buf = append(buf, dirEntry(labelBytes(opt.Label), attrVolumeID, 0, 0, t, d)...)
		}
		if dir != root {
			buf = append(buf, dirEntry(dotName("."), attrDirectory, dir.cluster, 0, t, d)...)
			parent := uint16(0)
			for _, p := range dirs {
				if p != root && p.children[dir.name] == dir {
					parent = p.cluster
				}
			}
			buf = append(buf, dirEntry(dotName(".."), attrDirectory, parent, 0, t, d)...)
		}
		for _, name := range sortedNames(dir) {
			c := dir.children[name]
			short := names[c]
			buf = append(buf, lfnEntries(name, short)...)
			attr, size := byte(attrArchive), uint32(c.size)
			if c.dir {
				attr, size = attrDirectory, 0
			}
			buf = append(buf, dirEntry(short, attr, c.cluster, size, t, d)...)
		}
		dir.entries = buf
	}

	// Boot sector.
	bs := make([]byte, reservedSectors*sectorSize)
	copy(bs[0:], []byte{0xEB, 0x3C, 0x90})
	copy(bs[3:11], "ARKA    ")
	binary.LittleEndian.PutUint16(bs[11:], sectorSize)
	bs[13] = sectorsPerCluster
	binary.LittleEndian.PutUint16(bs[14:], reservedSectors)
	bs[16] = 1 // number of FATs: exactly one (gokrazy's reader ignores this field)
	binary.LittleEndian.PutUint16(bs[17:], uint16(rootDirEntries))
	if total < 0x10000 {
		binary.LittleEndian.PutUint16(bs[19:], uint16(total))
	} else {
		binary.LittleEndian.PutUint32(bs[32:], uint32(total))
	}
	bs[21] = 0xF8
	binary.LittleEndian.PutUint16(bs[22:], uint16(fatSectors))
	binary.LittleEndian.PutUint16(bs[24:], 32) // sectors per track
	binary.LittleEndian.PutUint16(bs[26:], 64) // heads
	binary.LittleEndian.PutUint32(bs[28:], opt.HiddenSecs)
	bs[36] = 0x80
	bs[38] = 0x29
	binary.LittleEndian.PutUint32(bs[39:], opt.VolumeID)
	label := [11]byte([]byte("NO NAME    "))
	if opt.Label != "" {
		label = labelBytes(opt.Label)
	}
	copy(bs[43:54], label[:])
	copy(bs[54:62], "FAT16   ")
	bs[510], bs[511] = 0x55, 0xAA
	if _, err := w.WriteAt(bs, 0); err != nil {
		return nil, err
	}

	// FAT: media entry, end-of-chain marker, then one chain per node.
	fat := make([]byte, fatSectors*sectorSize)
	binary.LittleEndian.PutUint16(fat[0:], 0xFFF8)
	binary.LittleEndian.PutUint16(fat[2:], 0xFFFF)
	for _, n := range order {
		for i := 0; i < n.clusters; i++ {
			c := int(n.cluster) + i
			v := uint16(c + 1)
			if i == n.clusters-1 {
				v = 0xFFFF
			}
			binary.LittleEndian.PutUint16(fat[2*c:], v)
		}
	}
	if _, err := w.WriteAt(fat, reservedSectors*sectorSize); err != nil {
		return nil, err
	}

	// Root directory region, then data.
	rootBuf := make([]byte, rootDirSectors*sectorSize)
	copy(rootBuf, root.entries)
	if _, err := w.WriteAt(rootBuf, rootDirOff); err != nil {
		return nil, err
	}
	lay := &Layout{
		TotalSectors:    total,
		FATSectors:      fatSectors,
		RootDirEntries:  rootDirEntries,
		Clusters:        clusters,
		UsedClusters:    used,
		FileExtents:     map[string][2]int64{},
		DataOffset:      dataOff,
		RootDirOffset:   rootDirOff,
		BytesPerCluster: clusterSize,
	}
	var writePaths func(n *node, prefix string) error
	writePaths = func(n *node, prefix string) error {
		for _, name := range sortedNames(n) {
			c := n.children[name]
			p := path.Join(prefix, name)
			if c.dir {
				buf := make([]byte, c.clusters*clusterSize)
				copy(buf, c.entries)
				if _, err := w.WriteAt(buf, clusterOff(c.cluster)); err != nil {
					return err
				}
				if err := writePaths(c, p); err != nil {
					return err
				}
				continue
			}
			lay.FileExtents[p] = [2]int64{clusterOff(c.cluster), c.size}
			if c.clusters == 0 {
				continue
			}
			// Zero the cluster slack too, so the output does not depend on
			// what the target held before.
			slack := int64(c.clusters)*clusterSize - c.size
			if err := writeFile(w, c.file, clusterOff(c.cluster), c.size); err != nil {
				return err
			}
			if _, err := w.WriteAt(make([]byte, slack), clusterOff(c.cluster)+c.size); err != nil {
				return err
			}
		}
		return nil
	}
	if err := writePaths(root, ""); err != nil {
		return nil, err
	}
	// Zero the free clusters up to the end of the volume.
	free := int64(clusters-used) * clusterSize
	zero := make([]byte, 1<<20)
	off := clusterOff(uint16(next))
	for free > 0 {
		n := min(free, int64(len(zero)))
		if _, err := w.WriteAt(zero[:n], off); err != nil {
			return nil, err
		}
		off += n
		free -= n
	}
	return lay, nil
}

func writeFile(w io.WriterAt, f File, off, size int64) error {
	if f.Source == "" {
		_, err := w.WriteAt(f.Data, off)
		return err
	}
	src, err := os.Open(f.Source)
	if err != nil {
		return err
	}
	defer src.Close()
	n, err := io.Copy(io.NewOffsetWriter(w, off), src)
	if err != nil {
		return fmt.Errorf("fat16: copying %s: %w", f.Source, err)
	}
	if n != size {
		return fmt.Errorf("fat16: %s changed size while copying", f.Source)
	}
	return nil
}

func sortedNames(n *node) []string {
	names := make([]string, 0, len(n.children))
	for k := range n.children {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func roundUp(v, m int) int { return (v + m - 1) / m * m }

func labelBytes(s string) [11]byte {
	var b [11]byte
	copy(b[:], fmt.Sprintf("%-11.11s", strings.ToUpper(s)))
	return b
}

func dotName(s string) [11]byte {
	var b [11]byte
	copy(b[:], fmt.Sprintf("%-11s", s))
	return b
}

// shortName returns the 11-byte 8.3 name stored for name in a directory.
func shortName(name string, seen map[string]bool) ([11]byte, error) {
	var b [11]byte
	if name == "" || len(name) > 255 {
		return b, fmt.Errorf("fat16: bad file name %q", name)
	}
	for _, r := range name {
		if r < 0x20 || r > 0x7E || strings.ContainsRune(`"*/:<>?\|`, r) {
			return b, fmt.Errorf("fat16: file name %q: only printable ASCII is supported", name)
		}
	}
	if !strings.Contains(name, ".") && len(name) <= 8 && !strings.Contains(name, " ") {
		// Stored as given: gokrazy's reader matches extension-less names
		// only by exact, case-sensitive comparison (§3.3 rule 4).
		key := strings.ToUpper(name)
		if seen[key] {
			return b, fmt.Errorf("fat16: names differing only in case: %q", name)
		}
		seen[key] = true
		copy(b[:], fmt.Sprintf("%-11s", name))
		return b, nil
	}
	upper := strings.ToUpper(strings.ReplaceAll(name, " ", ""))
	upper = strings.TrimLeft(upper, ".")
	primary, ext := upper, ""
	if i := strings.LastIndex(upper, "."); i >= 0 {
		primary, ext = upper[:i], upper[i+1:]
	}
	primary = strings.ReplaceAll(primary, ".", "")
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if strings.ContainsRune("+,;=[]", r) {
				return '_'
			}
			return r
		}, s)
	}
	primary, ext = clean(primary), clean(ext)
	fits := len(primary) <= 8 && len(ext) <= 3 && primary != ""
	if len(ext) > 3 {
		ext = ext[:3]
	}
	if fits && !seen[primary+"."+ext] {
		seen[primary+"."+ext] = true
		copy(b[:], fmt.Sprintf("%-8s%-3s", primary, ext))
		return b, nil
	}
	for n := 1; n <= 999999; n++ {
		tail := "~" + strconv.Itoa(n)
		p := primary
		if len(p)+len(tail) > 8 {
			p = p[:8-len(tail)]
		}
		if !seen[p+tail+"."+ext] {
			seen[p+tail+"."+ext] = true
			copy(b[:], fmt.Sprintf("%-8s%-3s", p+tail, ext))
			return b, nil
		}
	}
	return b, fmt.Errorf("fat16: too many names like %q", name)
}

// displayName is how a reader shows an 8.3 entry without long names.
func displayName(short [11]byte) string {
	p := strings.TrimRight(string(short[:8]), " ")
	e := strings.TrimRight(string(short[8:]), " ")
	if e == "" {
		return p
	}
	return p + "." + e
}

// slotsFor is the number of 32-byte directory slots an entry takes.
func slotsFor(name string, short [11]byte) int {
	if displayName(short) == name {
		return 1
	}
	return 1 + (len(utf16.Encode([]rune(name)))+12)/13
}

func lfnChecksum(short [11]byte) byte {
	var sum byte
	for _, c := range short {
		sum = (sum>>1 | sum<<7) + c
	}
	return sum
}

// lfnEntries returns the VFAT long-name slots that precede the short entry,
// last part first, or nothing if the 8.3 name shows the name exactly.
func lfnEntries(name string, short [11]byte) []byte {
	if displayName(short) == name {
		return nil
	}
	u := utf16.Encode([]rune(name))
	n := (len(u) + 12) / 13
	padded := make([]uint16, n*13)
	for i := range padded {
		switch {
		case i < len(u):
			padded[i] = u[i]
		case i == len(u):
			padded[i] = 0
		default:
			padded[i] = 0xFFFF
		}
	}
	sum := lfnChecksum(short)
	out := make([]byte, 0, n*32)
	for seq := n; seq >= 1; seq-- {
		e := make([]byte, 32)
		e[0] = byte(seq)
		if seq == n {
			e[0] |= 0x40
		}
		e[11] = attrLFN
		e[13] = sum
		part := padded[(seq-1)*13 : seq*13]
		offs := []int{1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30}
		for i, o := range offs {
			binary.LittleEndian.PutUint16(e[o:], part[i])
		}
		out = append(out, e...)
	}
	return out
}

func dirEntry(short [11]byte, attr byte, cluster uint16, size uint32, t, d uint16) []byte {
	e := make([]byte, 32)
	copy(e[0:11], short[:])
	e[11] = attr
	binary.LittleEndian.PutUint16(e[14:], t) // creation time
	binary.LittleEndian.PutUint16(e[16:], d) // creation date
	binary.LittleEndian.PutUint16(e[18:], d) // last access date
	binary.LittleEndian.PutUint16(e[22:], t)
	binary.LittleEndian.PutUint16(e[24:], d)
	binary.LittleEndian.PutUint16(e[26:], cluster)
	binary.LittleEndian.PutUint32(e[28:], size)
	return e
}

func fatTime(tm time.Time) (t, d uint16) {
	tm = tm.UTC()
	if tm.Year() < 1980 {
		tm = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if tm.Year() > 2107 {
		tm = time.Date(2107, 12, 31, 23, 59, 58, 0, time.UTC)
	}
	t = uint16(tm.Hour()<<11 | tm.Minute()<<5 | tm.Second()/2)
	d = uint16((tm.Year()-1980)<<9 | int(tm.Month())<<5 | tm.Day())
	return t, d
}
