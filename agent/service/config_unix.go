//go:build !windows

package service

import "github.com/cairn-rmm/cairn/agent"

func defaultConfigPath() string { return "/etc/cairn-agent/" + agent.FileName }
