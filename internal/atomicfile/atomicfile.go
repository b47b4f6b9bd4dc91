// Package atomicfile writes a file so that it appears whole or not at all,
// even across a power cut (the appliance's SD card): the data goes to a
// temporary file in the same directory, which is synced to disk, renamed
// over the destination (github.com/google/renameio), and the directory
// is synced so that the rename itself is on disk too.
package atomicfile

import (
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// Write replaces (or creates) path with data, with permissions perm
// (whatever the umask). path's directory must exist. The temporary file is
// removed on failure; an error leaves the old content in place.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	t, err := renameio.NewPendingFile(path, renameio.WithTempDir(dir), renameio.WithStaticPermissions(perm))
	if err != nil {
		return err
	}
	defer t.Cleanup()
	if _, err := t.Write(data); err != nil {
		return err
	}
	if err := t.CloseAtomicallyReplace(); err != nil {
		return err
	}
	return SyncDir(dir)
}

// SyncDir syncs a directory, making the renames and new names in it
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
