package main

import (
	"context"
	"log"
	"os"

	"github.com/arkaweb/arka/appliance/device/supervise"
	"github.com/arkaweb/arka/appliance/initcfg"
)

// superviseArka is arka-init started by gokrazy as /user/arka (a symbolic
// link to /gokrazy/init): it runs the Arka binary with the arguments it got
// and restarts it with a backoff (1 s doubling to a minute) instead of
// gokrazy's fixed second, logging each exit with its status (gokrazy's log
// of /user/arka) and recording it in initcfg.SupervisorState, where the
// update agent finds the evidence of a failed trial. Its output passes
// through to gokrazy's log.
func superviseArka() int {
	log.SetPrefix("arka-supervise: ")
	log.SetFlags(0)
	err := supervise.Run(context.Background(), supervise.Options{
		Path: initcfg.ArkaBinary, Args: os.Args[1:], Env: os.Environ(),
		StateFile: initcfg.SupervisorState, Logf: log.Printf,
	})
	if err != nil {
		log.Print(err)
		return 1
	}
	return 0
}
