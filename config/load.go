package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Load reads the site configuration at path: one site file, or a directory
// whose *.toml files are each one site (read in name order; other files and
// subdirectories are ignored). It returns every mistake at once as Errors,
// each located "file:line:col", and no sites unless all are valid.
func Load(path string) ([]*Site, error) {
	files, err := siteFiles(path)
	if err != nil {
		return nil, err
	}
	return LoadFiles(files)
}

// siteFiles lists the site files Load reads for path.
func siteFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, Errors{{File: path, Msg: errText(err)}}
	}
	files := []string{path}
	if fi.IsDir() {
		files, err = filepath.Glob(filepath.Join(path, "*.toml"))
		if err != nil {
			return nil, Errors{{File: path, Msg: err.Error()}}
		}
		sort.Strings(files)
		if len(files) == 0 {
			return nil, Errors{{File: path, Msg: "no *.toml site files in this directory"}}
		}
	}
	return files, nil
}

// ReadFiles reads the site files Load would read for path, without
// validating them (see ParseFiles).
func ReadFiles(path string) ([]File, error) {
	names, err := siteFiles(path)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, f := range names {
		data, err := readSiteFile(f)
		if err != nil {
			return nil, Errors{{File: f, Msg: errText(err)}}
		}
		files = append(files, File{Name: f, Data: string(data)})
	}
	return files, nil
}

// LoadFiles reads and validates the given site files (see Load).
func LoadFiles(files []string) ([]*Site, error) {
	var (
		read []File
		errs Errors
	)
	for _, f := range files {
		data, err := readSiteFile(f)
		if err != nil {
			errs = append(errs, &Error{File: f, Msg: errText(err)})
			continue
		}
		read = append(read, File{Name: f, Data: string(data)})
	}
	sites, err := ParseFiles(read)
	if err != nil {
		errs = append(errs, err.(Errors)...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return sites, nil
}

// File is a site file's name (its path: relative paths inside it are
// relative to its directory) and content.
type File struct {
	Name string `json:"name"`
	Data string `json:"data"`
}

// ParseFiles validates site files already read, together, as LoadFiles
// does (cmd/arka -appliance keeps the last configuration that loaded this
// way).
func ParseFiles(files []File) ([]*Site, error) {
	var (
		sites []*Site
		errs  Errors
	)
	for _, f := range files {
		s, err := Parse(f.Name, []byte(f.Data))
		if err != nil {
			errs = append(errs, err.(Errors)...)
			continue
		}
		sites = append(sites, s)
	}
	if len(errs) == 0 {
		errs = append(errs, crossCheck(sites)...)
		errs = append(errs, phpConflicts(sites)...)
		resolveACME(sites)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return sites, nil
}

// Parse decodes and validates one site file. name is used in messages and
// to resolve nothing else: relative paths in the file are relative to the
// directory of name.
//
// Loading has four stages, one file each: decode (decode.go, the TOML into
// the schema's types, with positions), normalize (normalize.go, every
// default), validate (validate.go and the files of each feature, every
// value checked and parsed into its typed form) and, for a set of files,
// the checks between sites (crosscheck.go).
func Parse(name string, data []byte) (*Site, error) {
	// Relative paths in the file are relative to its directory, made
	// absolute by normalize: php-fpm and the handlers must not depend on
	// Arka's working directory (arka -c site.toml).
	dir, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		dir = filepath.Dir(name)
	}
	if e := CheckTOML(name, data); e != nil {
		return nil, Errors{e} // before indexing: the index is as quadratic in nesting as the decoder
	}
	v := &validator{file: name, pos: newPosIndex(data), dir: dir}
	site, err := v.decode(data)
	if err != nil {
		return nil, err
	}
	v.normalize(site)
	v.validate(site)
	if len(v.errs) > 0 {
		sort.SliceStable(v.errs, func(i, j int) bool { return v.errs[i].Line < v.errs[j].Line })
		return nil, v.errs
	}
	resolveACME([]*Site{site})
	return site, nil
}

// readSiteFile reads a site file, refusing anything but a regular file: a
// FIFO named like a site file would block `arka -t` and every reload
// forever, a device would be read without end.
func readSiteFile(name string) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if m := fi.Mode(); !m.IsRegular() && !m.IsDir() { // a directory: ReadFile says so
		what := "not a regular file"
		switch {
		case m&os.ModeNamedPipe != 0:
			what = "a named pipe (FIFO)"
		case m&os.ModeDevice != 0:
			what = "a device"
		case m&os.ModeSocket != 0:
			what = "a socket"
		}
		return nil, fmt.Errorf("%s, not a site file: a site file must be a regular file", what)
	}
	return os.ReadFile(name)
}
