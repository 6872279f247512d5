// Copyright (c) cnikit contributors
// SPDX-License-Identifier: GPL-3.0-or-later

//go:build libcni_gc

package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
)

// laterVerb runs the verbs libcni gained in 1.2: GC of the network (every cached attachment of
// it not listed in CNI_VALID_ATTACHMENTS is DELeted, then the plugins get GC) and STATUS.
func laterVerb(ctx context.Context, cni *libcni.CNIConfig, conf *libcni.NetworkConfigList, command string) error {
	switch command {
	case "gc":
		args := &libcni.GCArgs{}
		for _, attachment := range strings.Fields(os.Getenv("CNI_VALID_ATTACHMENTS")) {
			containerID, ifname, found := strings.Cut(attachment, "/")
			if !found {
				return fmt.Errorf("CNI_VALID_ATTACHMENTS: %q is not CONTAINERID/IFNAME", attachment)
			}
			args.ValidAttachments = append(args.ValidAttachments, types.GCAttachment{ContainerID: containerID, IfName: ifname})
		}
		return cni.GCNetworkList(ctx, conf, args)
	case "status":
		return cni.GetStatusNetworkList(ctx, conf)
	}
	return fmt.Errorf("unknown command %q", command)
}
