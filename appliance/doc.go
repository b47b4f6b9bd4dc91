// Package appliance documents the layout of Arka's gokrazy appliance code;
// it holds no code itself. Its packages are split by where they run:
//
// appliance/device: code that runs on the appliance, linked into
// cmd/arka-init (gokrazy's init) and cmd/arka:
//
//   - device/ota: the update agent (trial boot, verdict, rollback,
//     probation) and the update protocol's types (Status, Attempt,
//     PreflightRequest, TestbootRequest), which build/updater sends and
//     reads;
//   - device/mdns: <hostname>.local and DNS-SD;
//   - device/phpfpm: the php-fpm Arka runs, sized from the board budget;
//   - device/supervise: one program restarted with a backoff.
//
// appliance/build: code that runs on the build machine, linked into
// cmd/arka-appliance and used by tests/e2e:
//
//   - build/image: the disk image (gokrazy's layout, reproducible);
//   - build/phpimage, build/wifiimage: Debian's php-fpm and the Pi's Wi-Fi
//     firmware put into an image;
//   - build/flash: writing an image to an SD card or disk;
//   - build/vm: booting an image under QEMU;
//   - build/updater: the over-the-air update client.
//
// Shared by both sides, directly under appliance/, are the contracts
// between them and the formats both read or write:
//
//   - initcfg: what init supervises and the root file system paths the
//     image builder and init agree on;
//   - settings: the settings file (settings.txt) on the boot partition;
//   - fat16, partition: the boot file system and the partition table, which
//     the builder writes and the device reads and edits in place (updates,
//     settings);
//   - deploy: the site deploy protocol, its Client (build machine) and its
//     Store (device);
//   - devices: the device certificate (made on the device) and its pin
//     (kept on the build machine), plus the build machine's per-device
//     files.
//
// Device code never imports build code (the exception is tests, which
// build images to run against); build/updater imports device/ota for the
// update protocol's types only.
package appliance
