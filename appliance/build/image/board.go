package image

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os/exec"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/arkaweb/arka/appliance/partition"
	"github.com/arkaweb/arka/images"
)

// Module is a Go module pinned at one version, fetched from the module proxy
// (`go mod download`); Files are globs of files to copy from it.
type Module struct {
	Module  string   `toml:"module"`
	Version string   `toml:"version"`
	Files   []string `toml:"files"`
	// OmitModules (kernel only) leaves the kernel package's lib/modules
	// out of the root file system; otherwise its release must equal the
	// kernel image's (checkKernelModules).
	OmitModules bool `toml:"omit_modules"`
}

// Board is an image definition (images/boards/<name>.toml).
type Board struct {
	Name           string      `toml:"name"`
	Description    string      `toml:"description"`
	GOARCH         string      `toml:"goarch"`
	RootType       string      `toml:"root_type"`
	SerialConsole  string      `toml:"serial_console"`
	CmdlineReplace [][2]string `toml:"cmdline_replace"`
	EFILoader      string      `toml:"efi_loader"`
	EFILoaderName  string      `toml:"efi_loader_name"`
	ConfigTxt      bool        `toml:"config_txt"`
	Kernel         Module      `toml:"kernel"`
	Firmware       []Module    `toml:"firmware"`
	EEPROM         *Module     `toml:"eeprom"`
}

// Boards lists the board names defined in images/boards.
func Boards() []string {
	ents, _ := fs.ReadDir(images.Boards, "boards")
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".toml"))
	}
	sort.Strings(names)
	return names
}

// LoadBoard reads the board definition called name.
func LoadBoard(name string) (*Board, error) {
	file := "boards/" + name + ".toml"
	b, err := fs.ReadFile(images.Boards, file)
	if err != nil {
		return nil, fmt.Errorf("unknown board %q (known: %s)", name, strings.Join(Boards(), ", "))
	}
	var bd Board
	md, err := toml.Decode(string(b), &bd)
	if err != nil {
		return nil, fmt.Errorf("images/%s: %v", file, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("images/%s: unknown key %q", file, und[0].String())
	}
	if _, err := partition.ParseGUID(bd.RootType); err != nil {
		return nil, fmt.Errorf("images/%s: root_type: %v", file, err)
	}
	if bd.GOARCH != "amd64" && bd.GOARCH != "arm64" {
		return nil, fmt.Errorf("images/%s: goarch %q: want amd64 or arm64", file, bd.GOARCH)
	}
	if bd.Kernel.Module == "" || bd.Kernel.Version == "" {
		return nil, fmt.Errorf("images/%s: [kernel] needs module and version", file)
	}
	return &bd, nil
}

// Modules returns every data module the board needs.
func (b *Board) Modules() []Module {
	ms := []Module{b.Kernel}
	ms = append(ms, b.Firmware...)
	if b.EEPROM != nil {
		ms = append(ms, *b.EEPROM)
	}
	return ms
}

// downloadModule fetches m into the module cache with the go command and
// returns its directory. Only the Go module proxy is contacted.
func downloadModule(goCmd string, m Module) (string, error) {
	cmd := exec.Command(goCmd, "mod", "download", "-json", m.Module+"@"+m.Version)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res struct {
		Dir   string
		Error string
	}
	if jerr := json.Unmarshal(out, &res); jerr == nil && res.Error != "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", m.Module, m.Version, res.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %v\n%s", m.Module, m.Version, err, stderr.String())
	}
	if res.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: no directory in the answer", m.Module, m.Version)
	}
	return res.Dir, nil
}

// ModuleDir downloads m (if needed) and returns its directory in the
// module cache.
func ModuleDir(goCmd string, m Module) (string, error) { return downloadModule(goCmd, m) }
