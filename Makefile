# Arka: see README.md. Every target is meant to be run from the repo root.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/arkaweb/arka/server.Version=$(VERSION)
STATE   ?= .state

.PHONY: all build run test test-short vet fmt bench bench-quick bench-go bench-mem clean image vm update

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/arka ./cmd/arka

# Serve the embedded demo site on http://127.0.0.1:8080 and https://127.0.0.1:8443.
run: build
	./bin/arka -state $(STATE)

# go vet, staticcheck (honnef.co/go/tools, pinned as a tool in go.mod) and gofmt.
vet:
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo 'gofmt: files above need formatting'; exit 1)

# Every test: unit, integration (real binary, real php-fpm, real clients) and
# end-to-end (images booted in QEMU). The race detector is on.
test: vet
	$(GO) test -race -timeout 30m ./...
	# The race detector replaces wire's raw system calls with package
	# syscall's (rawsys_race.go): test the raw ones too.
	$(GO) test -count=1 ./server/internal/wire/

# Quick loop without the race detector and without QEMU boots.
test-short:
	$(GO) test -short ./...

# The comparison with nginx, Apache, Caddy and lighttpd (tests/bench; README
# "Performance"). Installs nothing: it lists what is missing and skips it.
# Results in tests/bench/results/<UTC time>/. Options through BENCH_ARGS, e.g.
#   make bench BENCH_ARGS='-servers arka,nginx -tests static,php -duration 5s'
# (go run ./tests/bench/cmd/arkabench -h lists them).
BENCH_ARGS ?=
bench: build
	$(GO) run ./tests/bench/cmd/arkabench -arka bin/arka $(BENCH_ARGS)

# One round of 1 s per test and server: checks that everything works (< 3 min).
bench-quick: build
	$(GO) run ./tests/bench/cmd/arkabench -arka bin/arka -quick $(BENCH_ARGS)

# Arka's hot paths in-process, with allocations; no external server needed.
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -v ./tests/bench/ ./server/internal/encoding/

# Arka's memory (live heap, RSS, peak RSS) at idle, with 64 busy and with
# 1000 idle keep-alive connections over HTTP/1.1, TLS and HTTP/2 (arkamem).
bench-mem: build
	$(GO) run ./tests/bench/cmd/arkamem -arka bin/arka

# Appliance image: images/out/arka-$(BOARD).img for BOARD=rpi (Raspberry Pi,
# arm64) or BOARD=amd64 (UEFI PCs and VMs). Reproducible: a clean tree builds
# with its last commit's time; SOURCE_DATE_EPOCH=... overrides it.
# PHP=1 adds php-fpm from Debian's packages (downloads cached in
# images/out/debs; see images/README.md). SITE=DIR bakes a site (sites/*.toml
# and its content) into the image; a deployed site wins over it.
BOARD ?= amd64
PHP   ?=
SITE  ?=
IMAGE_EPOCH = $(or $(SOURCE_DATE_EPOCH),$(shell git diff --quiet HEAD 2>/dev/null && git log -1 --format=%ct 2>/dev/null || date +%s))
image:
	SOURCE_DATE_EPOCH=$(IMAGE_EPOCH) $(GO) run ./cmd/arka-appliance build --board $(BOARD) --version $(VERSION) $(if $(filter 1 yes true,$(PHP)),--php) $(if $(SITE),--site $(SITE))

# Boot the image under QEMU (TCG, or KVM with VM_FLAGS=--kvm) with Arka
# (80, 443), the gokrazy UI (8080) and the HTTPS update/deploy API (8443) on
# forwarded loopback ports; prints the URLs and, once Arka answers, the
# deploy, status and update commands for the VM. Ctrl-C stops it.
vm: image
	$(GO) run ./cmd/arka-appliance vm --board $(BOARD) $(VM_FLAGS)

# Over-the-air update of a running appliance (builds first): HOST=name or
# address of the device (NAME=its name with an address, for its password).
# The new build runs on trial and becomes permanent only once Arka passes
# its health check there; otherwise it rolls back.
update:
	SOURCE_DATE_EPOCH=$(IMAGE_EPOCH) $(GO) run ./cmd/arka-appliance update --board $(BOARD) --version $(VERSION) $(if $(filter 1 yes true,$(PHP)),--php) --host $(HOST) $(if $(NAME),--name $(NAME))

clean:
	rm -rf bin images/out
