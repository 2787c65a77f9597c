package auth

// HashChecks counts the password hash verifications so far.
func (s *Service) HashChecks() int64 { return s.hashChecks.Load() }
