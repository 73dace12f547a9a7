//go:build linux

// landlockprobe says whether the kernel lets this process use Landlock: it
// asks for the ABI version (landlock_create_ruleset with
// LANDLOCK_CREATE_RULESET_VERSION), which needs no privilege. A container's
// seccomp profile may refuse the call even where the kernel has Landlock;
// deploy/image-test.sh runs this inside the image to find out.
package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// createRulesetVersion is LANDLOCK_CREATE_RULESET_VERSION from linux/landlock.h.
const createRulesetVersion = 1

func main() {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, createRulesetVersion)
	if errno != 0 {
		fmt.Printf("unavailable: %v\n", errno)
		os.Exit(1)
	}
	fmt.Printf("available: ABI version %d\n", abi)
}
