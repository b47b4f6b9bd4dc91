//go:build !linux

package static

// lowerPriority does nothing where threads have no priority of their own.
func lowerPriority() {}
