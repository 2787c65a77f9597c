package agent

// Device identity (docs/architecture.md "Device identity and clones"): a
// device is its Ed25519 key and the GUID the Engine assigned, never
// hardware values. A copy of an installed agent (a cloned disk) holds the
// same key and GUID; the Engine tells it device_cloned, and it becomes a
// device of its own with BecomeClone. Generalize clears the identity
// before an image is captured, so every machine made from it enrolls
// fresh.

// dropIdentity clears the key, GUID, agent ID, tokens, cached route and
// what this device's Engine records said (metadata), keeping the server
// URL, CA pins and enrollment settings.
func (c *Config) dropIdentity() {
	c.Ed25519PrivateKey = ""
	c.Agent.GUID, c.Agent.AgentID, c.Agent.Route = "", "", nil
	c.Agent.Liveness, c.Agent.DependencyState = nil, nil
	c.ClearTokens()
	c.CloneTicket = ""
	c.Metadata = Metadata{Queued: []MetadataEntry{}, Acknowledged: map[string]MetadataValue{}}
}

// BecomeClone turns this copy of an enrolled device into a new device
// waiting to enroll: a new key, no GUID or tokens, and the clone ticket to
// enroll with. The enrollment code and server settings stay.
func (c *Config) BecomeClone(ticket string) error {
	c.dropIdentity()
	c.CloneTicket = ticket
	return c.NewKey()
}

// Generalize clears the identity before a disk image is captured
// (cairn-agent generalize): no key, GUID or tokens, and no key written
// until NewKey. The next run makes a key and enrolls with the enrollment
// code, as a new device.
func (c *Config) Generalize() {
	c.dropIdentity()
	c.Generalized = true
}

// NewKey makes this machine's own key when it has none (after BecomeClone
// or on the first run of a generalized image).
func (c *Config) NewKey() error {
	c.Generalized = false
	_, err := c.EnsureKey()
	return err
}

// CanEnroll reports whether the agent can enroll on its own: with an
// enrollment code or a clone ticket.
func (c *Config) CanEnroll() bool { return c.EnrollmentCode != "" || c.CloneTicket != "" }
