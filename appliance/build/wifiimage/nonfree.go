package wifiimage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The Pi Zero 2 W's chip firmware is in none of Debian's packages
// (firmware-brcm80211 up to sid's 20260916-1, raspi-firmware, bluez-firmware
// carry no brcmfmac43436*); Raspberry Pi ships it in its own
// firmware-nonfree, a Debian source package outside Debian. The builder
// downloads those files at build time, from one pinned commit, and takes
// none whose SHA-256 differs from the one recorded here.
const (
	// NonFreeRepo is Raspberry Pi's firmware-nonfree repository.
	NonFreeRepo = "RPi-Distro/firmware-nonfree"
	// NonFreeCommit is the pinned commit: branch bookworm, 2024-02-26,
	// "Update changelog for 1:20230625-2+rpt2 release".
	NonFreeCommit = "223ccf3a3ddb11b3ea829749fbbba4d65b380897"
	// NonFreeDir is the files' directory in that repository.
	NonFreeDir = "debian/config/brcm80211/brcm"
	// NonFreeBaseURL serves a file of the repository at a commit as
	// NonFreeBaseURL/<commit>/<path>.
	NonFreeBaseURL = "https://raw.githubusercontent.com/" + NonFreeRepo
)

// NonFreeFiles are the files taken from firmware-nonfree, by name in
// NonFreeDir, with their SHA-256 (hex). The hashes were computed from the
// repository's objects at NonFreeCommit (git blob ids in the comments);
// files of other content are refused.
var NonFreeFiles = map[string]string{
	"brcmfmac43436-sdio.bin":      "510a7dd1e056199b309425548ee0bd846993a1837ac7fa1e4d3e641f05a1327a", // 416101 bytes, blob a09e0e1c
	"brcmfmac43436-sdio.clm_blob": "fce7cbb62ffa6a5a65ca97b13f6fbf28d06c02d986c2072d65bf72164755fc34", // 11209 bytes, blob 1efac506
	"brcmfmac43436-sdio.txt":      "4cda90facd8844cff60d80b34b24ecbae76adb9a62508a109461b8bf42b478d1", // 1706 bytes, blob 8eba004e
	"brcmfmac43436s-sdio.bin":     "68b9bcc9855d91733cd44c21de4cb507c91b0d32d838c0696def5eb96c99e2de", // 442211 bytes, blob 85dca979
	"brcmfmac43436s-sdio.txt":     "37a8b85a5a9742761101b764a07bc4d0c8b09f2e180eaea3b503a834277ad595", // 1185 bytes, blob bac89265
}

// nonFreeMaxSize bounds one download (the largest file is 432 KiB).
const nonFreeMaxSize = 4 << 20

// NonFreeCache is the directory under the cache where the files are kept,
// by their firmware-nonfree names; a person can also put them there by
// hand (they are checked the same way).
func NonFreeCache(cacheDir string) string {
	return filepath.Join(cacheDir, "rpi-firmware-nonfree", NonFreeCommit)
}

// NonFreeURL is where name is downloaded from (base "" means
// NonFreeBaseURL).
func NonFreeURL(base, name string) string {
	if base == "" {
		base = NonFreeBaseURL
	}
	return base + "/" + NonFreeCommit + "/" + NonFreeDir + "/" + name
}

// ErrNonFreeUnavailable wraps a failed download: the files could not be had
// (no network, server error). A file that arrived with the wrong SHA-256 is
// a different error.
var ErrNonFreeUnavailable = errors.New("firmware-nonfree (Raspberry Pi's) could not be downloaded")

// ErrChecksum wraps a firmware-nonfree file whose SHA-256 is not the
// recorded one: it is never put into an image.
var ErrChecksum = errors.New("SHA-256 mismatch")

// fetchNonFree returns the cached path of each name, downloading what the
// cache lacks. Every file, cached or new, is checked against NonFreeFiles.
func fetchNonFree(o Options, names []string) (map[string]string, error) {
	dir := o.NonFreeDir
	if dir == "" {
		dir = NonFreeCache(o.CacheDir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	paths := map[string]string{}
	sort.Strings(names)
	for _, name := range names {
		want, ok := NonFreeFiles[name]
		if !ok {
			return nil, fmt.Errorf("wifiimage: %s has no recorded SHA-256", name)
		}
		p := filepath.Join(dir, name)
		if b, err := os.ReadFile(p); err == nil {
			if got := sum(b); got != want {
				return nil, fmt.Errorf("wifiimage: %w: %s has SHA-256 %s, want %s (the file in the cache is not firmware-nonfree's at %.12s; delete it to download it again)", ErrChecksum, p, got, want, NonFreeCommit)
			}
			paths[name] = p
			continue
		}
		url := NonFreeURL(o.NonFreeBaseURL, name)
		o.Logf("downloading %s", url)
		b, err := download(url)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNonFreeUnavailable, err)
		}
		if got := sum(b); got != want {
			return nil, fmt.Errorf("wifiimage: %w: %s has SHA-256 %s, want %s: refusing firmware that is not the pinned file", ErrChecksum, url, got, want)
		}
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, p); err != nil {
			return nil, err
		}
		paths[name] = p
	}
	return paths, nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// nonFreeClient gives up on an unreachable server after 15 s (a firewall
// that drops packets), not after the whole download's bound.
var nonFreeClient = &http.Client{Transport: &http.Transport{
	Proxy:               http.ProxyFromEnvironment,
	DialContext:         (&net.Dialer{Timeout: 15 * time.Second}).DialContext,
	TLSHandshakeTimeout: 15 * time.Second,
}}

func download(url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := nonFreeClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, nonFreeMaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %v", url, err)
	}
	if len(b) > nonFreeMaxSize {
		return nil, fmt.Errorf("GET %s: more than %d bytes", url, nonFreeMaxSize)
	}
	return b, nil
}

// NonFreeHowTo says how to get the files onto a machine that cannot
// download them: each URL and SHA-256, and where to put them.
func NonFreeHowTo(cacheDir string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "put these files (Raspberry Pi's firmware-nonfree at commit %s) into %s:\n", NonFreeCommit, NonFreeCache(cacheDir))
	names := make([]string, 0, len(NonFreeFiles))
	for n := range NonFreeFiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&s, "  %s  %s\n    from %s\n", NonFreeFiles[n], n, NonFreeURL("", n))
	}
	return s.String()
}
