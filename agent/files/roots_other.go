//go:build !windows

package files

import "github.com/cairn-rmm/cairn/agent/proto"

func roots() (proto.FileRoots, error) {
	return proto.FileRoots{Roots: []proto.FileRoot{{Path: "/", Type: "fixed", Label: "/"}}}, nil
}
