package fastcgi

import "syscall"

const sysFstatat = syscall.SYS_NEWFSTATAT
