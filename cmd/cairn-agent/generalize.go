package main

import (
	"fmt"
	"io"

	"github.com/cairn-rmm/cairn/agent"
)

// generalize clears this agent's identity (key, GUID, agent ID, tokens,
// cached route, device metadata) and keeps the server URL, CA pins and
// enrollment code, so a disk image captured next makes every machine
// built from it enroll as a device of its own (docs/agent.md "Images
// and templates"). Stop the service first: a running agent would enroll
// again at once.
func generalize(path string, args []string, stdout io.Writer) error {
	if len(args) != 0 {
		return usagef("generalize takes no arguments")
	}
	c, err := agent.Update(path, "generalize", func(c *agent.Config) error {
		c.Generalize()
		return nil
	})
	if err != nil {
		return configErr(path, err)
	}
	code := "kept"
	if c.EnrollmentCode == "" {
		code = "absent: machines made from this image need `cairn-agent enroll`"
	}
	_, err = fmt.Fprintf(stdout, "identity cleared in %s (key, GUID, tokens); server %s and enrollment code %s.\n"+
		"Capture the image now, without starting the agent: each machine made from it enrolls as a new device.\n",
		path, c.ServerURL, code)
	return err
}
