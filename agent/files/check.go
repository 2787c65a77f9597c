package files

import "fmt"

// Check is the file_management role's health check: the agent can list
// the file-system roots every browse starts from.
func Check() error {
	r, err := roots()
	if err != nil {
		return err
	}
	if len(r.Roots) == 0 {
		return fmt.Errorf("no file-system roots to browse")
	}
	return nil
}
