// Package ota is the device side of Arka's over-the-air updates: updates
// that roll back by themselves.
//
// gokrazy's update API (its /update/ handlers) writes a new root file system
// to the inactive root partition and a new boot file system to partition 1.
// Arka's update client (package updater) then asks for a trial boot instead
// of gokrazy's permanent /update/switch:
//
//  1. PUT /update/root, PUT /update/bootonly (gokrazy; hashes compared);
//  2. POST /arka/update/testboot (this package): checks the written root
//     against the SHA-256 the client sent, records the attempt in
//     StatusFile on /perm, and has gokrazy set its trial flag in
//     cmdline.txt; root= keeps naming the running partition;
//  3. POST /reboot (gokrazy). gokrazy's init, still on the old root,
//     replaces the trial flag with gokrazy.switch_on_boot=1 and pivots into
//     the new root: the trial applies to this one boot;
//  4. on the new root, arka-init (Agent.RunTrial) checks Arka's health
//     (Health): every address Arka listens on must answer HTTP within
//     StartTimeout and keep answering, without Arka restarting, for
//     Stable. Then it points root= at the new partition (PointRootAt), and the
//     update is permanent. If the check fails, it records why and reboots:
//     root= still names the old partition, so the old build comes back;
//  5. whatever else stops the trial (a kernel panic and panic=10, init
//     crashing, the watchdog, a power cut, the Agent's TrialDeadline) ends
//     in a boot that starts the old root, whose arka-init then records the
//     attempt as rolled back.
//
// A trial boot runs with gokrazy's update handlers still aimed at the old
// kernel command line (they would write the running root), so until the
// next reboot the Agent answers them with 409 Conflict.
//
// The Agent serves its state on gokrazy's web UI (behind its password):
//
//	GET  /arka/update            Status (JSON)
//	POST /arka/update/preflight  PreflightRequest (JSON) -> Status: checks before anything is written
//	POST /arka/update/testboot   TestbootRequest (JSON) -> Status
//	POST /arka/update/rollback   -> Status: return to the other root partition (reboots)
package ota

import (
	"time"

	"github.com/arkaweb/arka/appliance/device/supervise"
)

// StatusFile is where the Agent keeps the last update attempt: on /perm,
// so that the build that runs after a rollback can report the failure.
const StatusFile = "/perm/arka/update-status.json"

// State is where an update attempt stands.
type State string

// Attempt states, in order.
const (
	Pending    State = "pending"     // written and checked; the next boot tries the new root
	Trial      State = "trial"       // the new root runs on trial; its health check runs
	Confirmed  State = "confirmed"   // the new root passed and is now the default
	Failed     State = "failed"      // the new root failed its health check; the device reboots into the old root
	RolledBack State = "rolled-back" // the device runs the old root again: the new one failed (Faulty), or on request (OnRequest)
)

// Build identifies a build of the appliance.
type Build struct {
	Board          string `json:"board,omitempty"`
	Version        string `json:"version,omitempty"`         // Arka's version
	BuildTimestamp string `json:"build_timestamp,omitempty"` // gokrazy's BuildTimestamp
	SBOMHash       string `json:"sbom_hash,omitempty"`       // gokrazy's SBOMHash
}

// Attempt is one update attempt.
type Attempt struct {
	Partition  int       `json:"partition"`   // root partition the new build was written to
	From       Build     `json:"from"`        // the build that ran when the update was asked for
	To         Build     `json:"to"`          // the new build
	RootSHA256 string    `json:"root_sha256"` // of the new root file system, checked on the device
	RootSize   int64     `json:"root_size"`   // bytes
	State      State     `json:"state"`
	Reason     string    `json:"reason,omitempty"` // why it failed or rolled back
	Requested  time.Time `json:"requested"`
	Started    time.Time `json:"started,omitzero"`  // trial boot reached arka-init
	Finished   time.Time `json:"finished,omitzero"` // confirmed, failed or rolled back
	// HealthySeconds is how long after the trial boot's programs were
	// started Arka answered on every address (the stable period not
	// included).
	HealthySeconds float64 `json:"healthy_seconds,omitempty"`
	// ProbationSeconds is how long after confirmation a crash loop still
	// returns to the old build (negative: none); ProbationEnds is when
	// that ends (wall clock), zero once it ended or was cut short (kept
	// when probation rolled the update back).
	ProbationSeconds float64   `json:"probation_seconds,omitempty"`
	ProbationEnds    time.Time `json:"probation_ends,omitzero"`
	// StartSeconds: see TestbootRequest.
	StartSeconds float64 `json:"start_seconds,omitempty"`
	// Checked are the health URLs the trial checked before it confirmed.
	Checked []string `json:"checked,omitempty"`
	// Faulty: the new build failed its trial or its probation (rollback
	// on request does not return to it).
	Faulty bool `json:"faulty,omitempty"`
	// Evidence is what the trial boot saw of Arka when it failed.
	Evidence *Evidence `json:"evidence,omitempty"`
	// Boot says what the way back did with the boot files (kernel,
	// command line, firmware): restored from the copy kept on /perm, or
	// why not.
	Boot string `json:"boot,omitempty"`
}

// OnRequest reports whether the attempt ended in a rollback that was asked
// for (`arka-appliance rollback`, POST /arka/update/rollback): State
// RolledBack without Faulty. The device then runs the build it was asked
// to run, From; nothing failed. Every automatic way back (a failed trial,
// a crash loop on probation) sets Faulty.
func (at *Attempt) OnRequest() bool {
	return at != nil && at.State == RolledBack && !at.Faulty
}

// Evidence of a failed trial, kept on /perm with the attempt.
type Evidence struct {
	Starts   int             `json:"starts"`              // Arka processes started during the trial
	LastExit *supervise.Exit `json:"last_exit,omitempty"` // how the last one ended: status or signal, last lines of output
	Problems []string        `json:"problems,omitempty"`  // what Arka reported about itself (its readiness file)
}

// Status is what GET /arka/update returns.
type Status struct {
	BootID string `json:"boot_id"` // changes with every boot (/proc/sys/kernel/random/boot_id)
	Build  Build  `json:"build"`   // the running build
	// Running is the root partition this system runs from, KernelRoot the
	// one the kernel's root= named at this boot: they differ on a trial
	// boot (until the next reboot, even once the trial is confirmed).
	Running    int  `json:"running_partition"`
	KernelRoot int  `json:"kernel_root_partition"`
	TrialBoot  bool `json:"trial_boot"`
	// NextBoot is the root partition the next boot runs (cmdline.txt on the
	// boot partition); NextIsTrial when that is a trial boot.
	NextBoot    int      `json:"next_boot_partition"`
	NextIsTrial bool     `json:"next_boot_trial"`
	Last        *Attempt `json:"last,omitempty"` // the last update attempt
	// Other is the build on the other root partition (5-Running), when it
	// holds one.
	Other *Build `json:"other_build,omitempty"`
	// Arka is its supervisor's record of this boot: restarts, last exit.
	Arka *supervise.State `json:"arka,omitempty"`
	// Boot is what the boot partition holds (whose kernel and firmware
	// the next boot starts); Kept the boot files kept on /perm for a way
	// back (see KeptBootFile).
	Boot *BootInfo  `json:"boot,omitempty"`
	Kept []KeptBoot `json:"kept_boot,omitempty"`
	// KernelCmdline is the command line this boot's kernel was started
	// with (/proc/cmdline): the boot files that actually booted.
	KernelCmdline string `json:"kernel_cmdline,omitempty"`
}

// TestbootRequest is the body of POST /arka/update/testboot.
type TestbootRequest struct {
	To         Build  `json:"to"`
	RootSHA256 string `json:"root_sha256"` // hex SHA-256 of the root file system sent to /update/root
	RootSize   int64  `json:"root_size"`
	// ProbationSeconds: see Attempt; 0 is DefaultProbation, negative none.
	ProbationSeconds float64 `json:"probation_seconds,omitempty"`
	// StartSeconds bounds how long the trial waits for Arka to be healthy
	// (0: the device's default, Health.StartTimeout).
	StartSeconds float64 `json:"start_seconds,omitempty"`
}
