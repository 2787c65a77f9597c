package service

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// configDirSDDL grants full control to SYSTEM and the Administrators
// group only, inherited by everything created inside, and protected from
// the parent's entries (%ProgramData% lets every user read).
const configDirSDDL = "D:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"

// SecureConfigDir limits the directory holding agent.json (the device key
// and tokens) and its logs to SYSTEM and Administrators. Files already in
// it take the new inherited entries.
func SecureConfigDir(dir string) error {
	sd, err := windows.SecurityDescriptorFromString(configDirSDDL)
	if err != nil {
		return fmt.Errorf("secure %s: %w", dir, err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return fmt.Errorf("secure %s: %w", dir, err)
	}
	err = windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
	if err != nil {
		return fmt.Errorf("secure %s: %w", dir, hint(err))
	}
	return nil
}
