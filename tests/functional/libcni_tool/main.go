// Copyright (c) cnikit contributors
// SPDX-License-Identifier: GPL-3.0-or-later

// libcni-tool does what cnitool does (cnitool's source is not packaged by Debian) with the
// distribution's libcni, so tests can prove that libcni reads the collection's result cache and
// the collection reads libcni's. scripts/lib.sh builds it against each tested libcni release.
//
//	libcni-tool add|check|del|cached NETWORK NETNS-PATH
//	libcni-tool gc|status NETWORK -        (built with the tag "libcni_gc", libcni 1.2 and later)
//
// Environment: NETCONFPATH (conf dir), CNI_PATH, CNI_CACHE_DIR, CNI_IFNAME (default eth0),
// CNI_CONTAINERID (default: cnitool's ID for the netns path), and for gc
// CNI_VALID_ATTACHMENTS: the attachments GC must keep, "CONTAINERID/IFNAME" separated by spaces.
package main

import (
	"context"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containernetworking/cni/libcni"
)

func containerID(netns string) string {
	if id := os.Getenv("CNI_CONTAINERID"); id != "" {
		return id
	}
	sum := sha512.Sum512([]byte(netns))
	return fmt.Sprintf("cnitool-%x", sum[:10])
}

func run() error {
	if len(os.Args) != 4 {
		return fmt.Errorf("usage: %s add|check|del|cached|gc|status NETWORK NETNS-PATH", os.Args[0])
	}
	command, network := os.Args[1], os.Args[2]
	netns, err := filepath.Abs(os.Args[3])
	if err != nil {
		return err
	}
	conf, err := libcni.LoadConfList(os.Getenv("NETCONFPATH"), network)
	if err != nil {
		return err
	}
	ifname := os.Getenv("CNI_IFNAME")
	if ifname == "" {
		ifname = "eth0"
	}
	cni := libcni.NewCNIConfigWithCacheDir(filepath.SplitList(os.Getenv("CNI_PATH")), os.Getenv("CNI_CACHE_DIR"), nil)
	rt := &libcni.RuntimeConf{ContainerID: containerID(netns), NetNS: netns, IfName: ifname}
	ctx := context.Background()
	switch command {
	case "add":
		result, err := cni.AddNetworkList(ctx, conf, rt)
		if err != nil {
			return err
		}
		return result.Print()
	case "check":
		return cni.CheckNetworkList(ctx, conf, rt)
	case "del":
		return cni.DelNetworkList(ctx, conf, rt)
	case "cached":
		result, err := cni.GetNetworkListCachedResult(conf, rt)
		if err != nil {
			return err
		}
		if result == nil {
			return fmt.Errorf("no cached result")
		}
		return json.NewEncoder(os.Stdout).Encode(result)
	}
	return laterVerb(ctx, cni, conf, command)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
