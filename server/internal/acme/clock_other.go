//go:build !linux

package acme

func kernelSynced() bool { return false }
