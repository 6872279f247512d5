// Copyright (c) cnikit contributors
// SPDX-License-Identifier: GPL-3.0-or-later

//go:build !libcni_gc

package main

import (
	"context"
	"fmt"

	"github.com/containernetworking/cni/libcni"
)

// laterVerb: libcni before 1.2 has neither GC nor STATUS.
func laterVerb(_ context.Context, _ *libcni.CNIConfig, _ *libcni.NetworkConfigList, command string) error {
	return fmt.Errorf("unknown command %q (gc and status need libcni 1.2 or later)", command)
}
