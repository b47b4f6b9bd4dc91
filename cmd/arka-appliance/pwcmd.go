package main

import "errors"

func cmdPassword(args []string) error { return errors.New("password: not yet") }
