package main

import (
	"os/exec"
	"strconv"
	"strings"
)

// sourceStamp is how an image built from the source tree in dir is stamped
// when neither --version nor SOURCE_DATE_EPOCH says otherwise, the same as
// the Makefile's VERSION and IMAGE_EPOCH give `make image` and `make
// update`: the version is `git describe --tags --always --dirty` ("dev"
// outside a git checkout), the build time (seconds since 1970) the last
// commit's while the tree has no changes, else 0 (image.Config: now).
func sourceStamp(dir string) (version string, epoch int64) {
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	version = "dev"
	if v, err := git("describe", "--tags", "--always", "--dirty"); err == nil && v != "" {
		version = v
	}
	if _, err := git("diff", "--quiet", "HEAD"); err != nil {
		return version, 0
	}
	if ct, err := git("log", "-1", "--format=%ct"); err == nil {
		epoch, _ = strconv.ParseInt(ct, 10, 64)
	}
	return version, epoch
}
