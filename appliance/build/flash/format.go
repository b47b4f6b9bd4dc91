package flash

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// partitionEnd checks that head, the start of an image, holds a partition
// table, an MBR (signature 0x55 0xAA at byte 510) or a GPT (header
// "EFI PART" at byte 512, UEFI 2.10 §5.3.2), and returns the byte where
// what it describes ends: the end of the last partition, or of the backup
// GPT header (the image's last sector). An image shorter than that is
// truncated.
func partitionEnd(head []byte) (int64, error) {
	if len(head) < 512 {
		return 0, fmt.Errorf("it holds %d bytes, too few for a partition table", len(head))
	}
	mbr := head[510] == 0x55 && head[511] == 0xAA
	gpt := len(head) >= 1024 && string(head[512:520]) == "EFI PART"
	if !mbr && !gpt {
		return 0, errors.New("it does not begin with a partition table (no MBR signature 0x55AA at byte 510, no GPT header at byte 512)")
	}
	var end int64
	if mbr {
		for i := range 4 {
			e := head[446+16*i:]
			if e[4] == 0 || e[4] == 0xEE { // empty, or GPT's protective entry
				continue
			}
			lba, n := binary.LittleEndian.Uint32(e[8:]), binary.LittleEndian.Uint32(e[12:])
			end = max(end, (int64(lba)+int64(n))*512)
		}
	}
	if gpt {
		h := head[512:]
		if alt := binary.LittleEndian.Uint64(h[32:]); alt < 1<<40 {
			end = max(end, int64(alt+1)*512)
		}
		entries := binary.LittleEndian.Uint64(h[72:])
		count, size := binary.LittleEndian.Uint32(h[80:]), binary.LittleEndian.Uint32(h[84:])
		if size >= 128 && entries < 1<<20 {
			for i := range uint64(min(count, 1024)) {
				off := entries*512 + i*uint64(size)
				if off+128 > uint64(len(head)) {
					break
				}
				e := head[off:]
				if allZero(e[:16]) { // unused entry
					continue
				}
				if last := binary.LittleEndian.Uint64(e[40:]); last < 1<<40 {
					end = max(end, int64(last+1)*512)
				}
			}
		}
	}
	if end == 0 {
		return 0, errors.New("its partition table lists no partitions")
	}
	return end, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// xzSize returns the uncompressed size of the .xz file f of size bytes,
// summed from the index of each stream (The .xz File Format 1.2.0, §2.1.2
// stream footer, §4 index), reading backwards from the end. A file cut
// short has no footer there and is an error. (github.com/ulikunitz/xz
// checks the index while decompressing but does not expose it.)
func xzSize(f *os.File, size int64) (int64, error) {
	var total int64
	end := size
	for end > 0 {
		var pad [4]byte // stream padding: null bytes in fours
		for end >= 4 {
			if _, err := f.ReadAt(pad[:], end-4); err != nil {
				return 0, err
			}
			if pad != [4]byte{} {
				break
			}
			end -= 4
		}
		if end < 24 {
			return 0, errors.New("no XZ stream footer at its end")
		}
		var foot [12]byte
		if _, err := f.ReadAt(foot[:], end-12); err != nil {
			return 0, err
		}
		if string(foot[10:]) != "YZ" || crc32.ChecksumIEEE(foot[4:10]) != binary.LittleEndian.Uint32(foot[:4]) {
			return 0, errors.New("no XZ stream footer at its end")
		}
		backward := (int64(binary.LittleEndian.Uint32(foot[4:8])) + 1) * 4
		idxStart := end - 12 - backward
		if idxStart < 12 || backward > 64<<20 {
			return 0, errors.New("bad XZ index size")
		}
		idx := make([]byte, backward)
		if _, err := f.ReadAt(idx, idxStart); err != nil && err != io.EOF {
			return 0, err
		}
		if idx[0] != 0 || crc32.ChecksumIEEE(idx[:backward-4]) != binary.LittleEndian.Uint32(idx[backward-4:]) {
			return 0, errors.New("bad XZ index")
		}
		p := idx[1 : backward-4]
		next := func() uint64 {
			v, n := binary.Uvarint(p)
			if n <= 0 {
				p = nil
				return 0
			}
			p = p[n:]
			return v
		}
		records := next()
		var blocks int64
		for range records {
			unpadded, uncompressed := next(), next()
			if p == nil || unpadded > 1<<62 || uncompressed > 1<<62 {
				return 0, errors.New("bad XZ index")
			}
			blocks += (int64(unpadded) + 3) &^ 3
			total += int64(uncompressed)
		}
		start := idxStart - blocks - 12
		var magic [6]byte
		if start < 0 {
			return 0, errors.New("bad XZ index")
		}
		if _, err := f.ReadAt(magic[:], start); err != nil || string(magic[:]) != "\xfd7zXZ\x00" {
			return 0, errors.New("bad XZ index")
		}
		end = start
	}
	return total, nil
}
