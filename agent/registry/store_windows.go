//go:build windows

package registry

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/windows"
	winreg "golang.org/x/sys/windows/registry"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// System is the machine's registry, through advapi32 (the 64-bit view:
// the agent is a 64-bit program).
func System() Store { return systemStore{} }

type systemStore struct{}

var rootKeys = map[string]winreg.Key{
	"HKLM": winreg.LOCAL_MACHINE, "HKCU": winreg.CURRENT_USER, "HKCR": winreg.CLASSES_ROOT,
	"HKU": winreg.USERS, "HKCC": winreg.CURRENT_CONFIG,
}

// RegCopyTreeW copies a key's subkeys and values (Vista and later, and
// Wine). x/sys/windows/registry has no wrapper; RegRenameKey is missing
// from Wine, so a rename is a copy and a delete.
var procRegCopyTree = windows.NewLazySystemDLL("advapi32.dll").NewProc("RegCopyTreeW")

func open(p Path, access uint32) (winreg.Key, error) {
	k, err := winreg.OpenKey(rootKeys[p.Root], p.Sub, access)
	if err != nil {
		return 0, keyError(p, err)
	}
	return k, nil
}

// keyError classifies a failure on key p.
func keyError(p Path, err error) error {
	switch {
	case errors.Is(err, windows.ERROR_FILE_NOT_FOUND), errors.Is(err, windows.ERROR_PATH_NOT_FOUND):
		return KeyNotFound(p)
	case errors.Is(err, windows.ERROR_ACCESS_DENIED):
		return &proto.Error{Code: proto.CodeOpPermission, Message: fmt.Sprintf("%s: access denied", p)}
	}
	return &proto.Error{Code: proto.CodeOpFailed, Message: fmt.Sprintf("%s: %v", p, err)}
}

func exists(p Path) (bool, error) {
	k, err := open(p, winreg.QUERY_VALUE)
	if err == nil {
		k.Close()
		return true, nil
	}
	var pe *proto.Error
	if errors.As(err, &pe) && pe.Code == proto.CodeRegistryKeyNotFound {
		return false, nil
	}
	return false, err
}

func (systemStore) Children(p Path) ([]string, []Value, error) {
	k, err := open(p, winreg.ENUMERATE_SUB_KEYS|winreg.QUERY_VALUE)
	if err != nil {
		return nil, nil, err
	}
	defer k.Close()
	names, err := k.ReadSubKeyNames(-1)
	if err != nil {
		return nil, nil, keyError(p, err)
	}
	valueNames, err := k.ReadValueNames(-1)
	if err != nil {
		return nil, nil, keyError(p, err)
	}
	values := make([]Value, 0, len(valueNames))
	for _, name := range valueNames {
		n, typ, err := k.GetValue(name, nil)
		if err != nil {
			return nil, nil, keyError(p, err)
		}
		buf := make([]byte, n)
		if n > 0 {
			if n, typ, err = k.GetValue(name, buf); err != nil {
				return nil, nil, keyError(p, err)
			}
		}
		values = append(values, FromRaw(name, typ, buf[:n]))
	}
	return names, values, nil
}

func (systemStore) CreateKey(p Path) error {
	parent, err := open(p.Parent(), winreg.CREATE_SUB_KEY)
	if err != nil {
		return err
	}
	defer parent.Close()
	k, existed, err := winreg.CreateKey(parent, p.Name(), winreg.QUERY_VALUE)
	if err != nil {
		return keyError(p, err)
	}
	k.Close()
	if existed {
		return Exists("key " + p.String())
	}
	return nil
}

func (s systemStore) RenameKey(p Path, newName string) error {
	to := p.Parent().Child(newName)
	src, err := open(p, winreg.READ)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := s.CreateKey(to); err != nil {
		return err
	}
	dst, err := open(to, winreg.ALL_ACCESS)
	if err != nil {
		return err
	}
	r, _, _ := procRegCopyTree.Call(uintptr(src), 0, uintptr(dst))
	dst.Close()
	if r != 0 {
		// Leave nothing half-copied behind: the old key is untouched.
		_ = deleteTree(to)
		return keyError(p, syscall.Errno(r))
	}
	return deleteTree(p)
}

func (systemStore) DeleteKey(p Path) error { return deleteTree(p) }

// deleteTree deletes p's subkeys depth first, then p (RegDeleteKey only
// deletes a key without subkeys).
func deleteTree(p Path) error {
	k, err := open(p, winreg.ENUMERATE_SUB_KEYS)
	if err != nil {
		return err
	}
	names, err := k.ReadSubKeyNames(-1)
	k.Close()
	if err != nil {
		return keyError(p, err)
	}
	for _, n := range names {
		if err := deleteTree(p.Child(n)); err != nil {
			return err
		}
	}
	parent, err := open(p.Parent(), winreg.ENUMERATE_SUB_KEYS)
	if err != nil {
		return err
	}
	defer parent.Close()
	if err := winreg.DeleteKey(parent, p.Name()); err != nil {
		return keyError(p, err)
	}
	return nil
}

func (systemStore) SetValue(p Path, v Value, create bool) error {
	k, err := open(p, winreg.QUERY_VALUE|winreg.SET_VALUE)
	if err != nil {
		return err
	}
	defer k.Close()
	_, _, err = k.GetValue(v.Name, nil)
	switch {
	case err == nil && create:
		return Exists(fmt.Sprintf("value %q in %s", v.Name, p))
	case errors.Is(err, windows.ERROR_FILE_NOT_FOUND) && !create:
		return ValueNotFound(p, v.Name)
	case err != nil && !errors.Is(err, windows.ERROR_FILE_NOT_FOUND):
		return keyError(p, err)
	}
	switch d := v.Data.(type) {
	case string:
		if v.Type == TypeExpandSZ {
			err = k.SetExpandStringValue(v.Name, d)
		} else {
			err = k.SetStringValue(v.Name, d)
		}
	case []string:
		err = k.SetStringsValue(v.Name, d)
	case uint32:
		err = k.SetDWordValue(v.Name, d)
	case uint64:
		err = k.SetQWordValue(v.Name, d)
	case []byte:
		err = k.SetBinaryValue(v.Name, d)
	default:
		return &proto.Error{Code: proto.CodeRegistryTypeInvalid, Message: fmt.Sprintf("cannot write %T", v.Data)}
	}
	if err != nil {
		return keyError(p, err)
	}
	return nil
}

func (systemStore) DeleteValue(p Path, name string) error {
	k, err := open(p, winreg.SET_VALUE)
	if err != nil {
		return err
	}
	defer k.Close()
	if err := k.DeleteValue(name); err != nil {
		if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) {
			return ValueNotFound(p, name)
		}
		return keyError(p, err)
	}
	return nil
}
