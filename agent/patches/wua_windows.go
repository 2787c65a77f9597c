//go:build windows

package patches

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	ole "github.com/go-ole/go-ole"
	"github.com/go-ole/go-ole/oleutil"
)

// ComWUA is the Windows Update Agent over COM (Microsoft.Update.Session,
// Microsoft.Update.SystemInfo) and WMI (Win32_QuickFixEngineering). Each
// call runs on its own locked OS thread inside CoInitializeEx, so callers
// need not care which goroutine they are on. Only real Windows exercises
// it: Wine has no WUA.
type ComWUA struct{}

// HRESULTs of a Windows Update Agent this machine does not have:
// CO_E_CLASSSTRING (no such ProgID), REGDB_E_CLASSNOTREG, and E_NOTIMPL
// (Wine's wuapi stub, whose CreateUpdateSearcher is not implemented).
const (
	coClassString    = 0x800401F3
	regdbClassNotReg = 0x80040154
	eNotImpl         = 0x80004001
)

// absent marks an error that says the WUA is missing as ErrNoWUA.
func absent(what string, err error) error {
	var oe *ole.OleError
	if errors.As(err, &oe) {
		switch oe.Code() {
		case coClassString, regdbClassNotReg, eNotImpl:
			return fmt.Errorf("%w: %s: %v", ErrNoWUA, what, err)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// withCOM runs fn on a locked thread with COM initialised.
func withCOM(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := ole.CoInitializeEx(0, ole.COINIT_APARTMENTTHREADED); err != nil {
			// S_FALSE: already initialised on this thread, which is fine.
			if oe, ok := err.(*ole.OleError); !ok || oe.Code() != 1 {
				done <- fmt.Errorf("CoInitializeEx: %w", err)
				return
			}
		}
		defer ole.CoUninitialize()
		done <- fn()
	}()
	return <-done
}

// create makes a COM object by ProgID and returns its IDispatch.
func create(progID string) (*ole.IDispatch, error) {
	unk, err := oleutil.CreateObject(progID)
	if err != nil {
		return nil, absent("create "+progID, err)
	}
	defer unk.Release()
	d, err := unk.QueryInterface(ole.IID_IDispatch)
	if err != nil {
		return nil, fmt.Errorf("%s IDispatch: %w", progID, err)
	}
	return d, nil
}

// prop reads a property; the caller clears the variant.
func prop(d *ole.IDispatch, name string, args ...any) (*ole.VARIANT, error) {
	v, err := oleutil.GetProperty(d, name, args...)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", name, err)
	}
	return v, nil
}

func propDispatch(d *ole.IDispatch, name string, args ...any) (*ole.IDispatch, error) {
	v, err := prop(d, name, args...)
	if err != nil {
		return nil, err
	}
	out := v.ToIDispatch()
	if out == nil {
		return nil, fmt.Errorf("%s is not an object", name)
	}
	return out, nil
}

func propString(d *ole.IDispatch, name string) string {
	v, err := prop(d, name)
	if err != nil {
		return ""
	}
	defer v.Clear()
	if s, ok := v.Value().(string); ok {
		return s
	}
	return ""
}

func propInt(d *ole.IDispatch, name string) int64 {
	v, err := prop(d, name)
	if err != nil {
		return 0
	}
	defer v.Clear()
	switch n := v.Value().(type) {
	case int8:
		return int64(n)
	case int16:
		return int64(n)
	case int32:
		return int64(n)
	case int64:
		return n
	case uint8:
		return int64(n)
	case uint16:
		return int64(n)
	case uint32:
		return int64(n)
	case uint64:
		return int64(n)
	case int:
		return int64(n)
	case float64:
		return int64(n)
	}
	return 0 // VT_DECIMAL (MaxDownloadSize on some builds) is not read
}

func propBool(d *ole.IDispatch, name string) bool {
	v, err := prop(d, name)
	if err != nil {
		return false
	}
	defer v.Clear()
	b, _ := v.Value().(bool)
	return b
}

func propTime(d *ole.IDispatch, name string) time.Time {
	v, err := prop(d, name)
	if err != nil {
		return time.Time{}
	}
	defer v.Clear()
	t, _ := v.Value().(time.Time)
	return t
}

// each calls fn for every item of a COM collection (Count, Item(i)).
func each(coll *ole.IDispatch, fn func(item *ole.IDispatch) error) error {
	n := int(propInt(coll, "Count"))
	for i := 0; i < n; i++ {
		item, err := propDispatch(coll, "Item", i)
		if err != nil {
			return err
		}
		err = fn(item)
		item.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// strings reads a collection of strings (KBArticleIDs).
func stringItems(coll *ole.IDispatch) []string {
	var out []string
	n := int(propInt(coll, "Count"))
	for i := 0; i < n; i++ {
		v, err := prop(coll, "Item", i)
		if err != nil {
			continue
		}
		if s, ok := v.Value().(string); ok {
			out = append(out, s)
		}
		v.Clear()
	}
	return out
}

// searcher makes an IUpdateSearcher.
func searcher() (session, s *ole.IDispatch, err error) {
	session, err = create("Microsoft.Update.Session")
	if err != nil {
		return nil, nil, err
	}
	v, err := oleutil.CallMethod(session, "CreateUpdateSearcher")
	if err != nil {
		session.Release()
		return nil, nil, absent("CreateUpdateSearcher", err)
	}
	return session, v.ToIDispatch(), nil
}

// Search runs IUpdateSearcher.Search(criteria).
func (ComWUA) Search(ctx context.Context, criteria string) ([]WUAUpdate, error) {
	var out []WUAUpdate
	err := withCOM(func() error {
		session, s, err := searcher()
		if err != nil {
			return err
		}
		defer session.Release()
		defer s.Release()
		rv, err := oleutil.CallMethod(s, "Search", criteria)
		if err != nil {
			return fmt.Errorf("IUpdateSearcher.Search: %w", err)
		}
		result := rv.ToIDispatch()
		defer result.Release()
		updates, err := propDispatch(result, "Updates")
		if err != nil {
			return err
		}
		defer updates.Release()
		return each(updates, func(u *ole.IDispatch) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			up := WUAUpdate{Title: propString(u, "Title"), MSRCSeverity: propString(u, "MsrcSeverity"),
				MaxDownload: propInt(u, "MaxDownloadSize"), Released: propTime(u, "LastDeploymentChangeTime")}
			if id, err := propDispatch(u, "Identity"); err == nil {
				up.UpdateID, up.Revision = propString(id, "UpdateID"), int(propInt(id, "RevisionNumber"))
				id.Release()
			}
			if kbs, err := propDispatch(u, "KBArticleIDs"); err == nil {
				up.KBs = stringItems(kbs)
				kbs.Release()
			}
			if cats, err := propDispatch(u, "Categories"); err == nil {
				_ = each(cats, func(c *ole.IDispatch) error {
					up.Categories = append(up.Categories, propString(c, "Name"))
					return nil
				})
				cats.Release()
			}
			if ib, err := propDispatch(u, "InstallationBehavior"); err == nil {
				up.Reboot = int(propInt(ib, "RebootBehavior"))
				ib.Release()
			}
			out = append(out, up)
			return nil
		})
	})
	return out, err
}

// History reads the whole update history (QueryHistory(0, total)).
func (ComWUA) History(ctx context.Context) ([]WUAHistoryEntry, error) {
	var out []WUAHistoryEntry
	err := withCOM(func() error {
		session, s, err := searcher()
		if err != nil {
			return err
		}
		defer session.Release()
		defer s.Release()
		nv, err := oleutil.CallMethod(s, "GetTotalHistoryCount")
		if err != nil {
			return fmt.Errorf("GetTotalHistoryCount: %w", err)
		}
		n, _ := nv.Value().(int32)
		nv.Clear()
		if n == 0 {
			return nil
		}
		hv, err := oleutil.CallMethod(s, "QueryHistory", 0, n)
		if err != nil {
			return fmt.Errorf("QueryHistory: %w", err)
		}
		hist := hv.ToIDispatch()
		defer hist.Release()
		return each(hist, func(h *ole.IDispatch) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			e := WUAHistoryEntry{Title: propString(h, "Title"), Date: propTime(h, "Date"),
				Operation: int(propInt(h, "Operation")), ResultCode: int(propInt(h, "ResultCode"))}
			if id, err := propDispatch(h, "UpdateIdentity"); err == nil {
				e.UpdateID, e.Revision = propString(id, "UpdateID"), int(propInt(id, "RevisionNumber"))
				id.Release()
			}
			out = append(out, e)
			return nil
		})
	})
	return out, err
}

// QuickFixes queries Win32_QuickFixEngineering over WMI.
func (ComWUA) QuickFixes(ctx context.Context) ([]QuickFix, error) {
	var out []QuickFix
	err := withCOM(func() error {
		loc, err := create("WbemScripting.SWbemLocator")
		if err != nil {
			return err
		}
		defer loc.Release()
		sv, err := oleutil.CallMethod(loc, "ConnectServer", ".", `root\cimv2`)
		if err != nil {
			return fmt.Errorf("WMI ConnectServer: %w", err)
		}
		svc := sv.ToIDispatch()
		defer svc.Release()
		rv, err := oleutil.CallMethod(svc, "ExecQuery", "SELECT HotFixID, Description, InstalledOn FROM Win32_QuickFixEngineering")
		if err != nil {
			return fmt.Errorf("WMI ExecQuery: %w", err)
		}
		rows := rv.ToIDispatch()
		defer rows.Release()
		return oleutil.ForEach(rows, func(v *ole.VARIANT) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r := v.ToIDispatch()
			out = append(out, QuickFix{HotFixID: propString(r, "HotFixID"), Description: propString(r, "Description"),
				InstalledOn: propString(r, "InstalledOn")})
			return nil
		})
	})
	return out, err
}

// RebootRequired reads Microsoft.Update.SystemInfo.RebootRequired.
func (ComWUA) RebootRequired(context.Context) (bool, error) {
	var out bool
	err := withCOM(func() error {
		si, err := create("Microsoft.Update.SystemInfo")
		if err != nil {
			return err
		}
		defer si.Release()
		out = propBool(si, "RebootRequired")
		return nil
	})
	return out, err
}

// Detect is the Windows provider over COM.
func Detect() Provider { return &Windows{WUA: ComWUA{}} }

// DetectInstaller installs through the Windows Update Agent.
func DetectInstaller() Installer { return &WUAInstaller{WUA: ComWUA{}} }

// update finds the IUpdate of an identity and revision (a search by
// UpdateID and RevisionNumber) and calls fn with the session and an
// IUpdateCollection holding it.
func update(updateID string, revision int, fn func(session, coll, u *ole.IDispatch) error) error {
	session, s, err := searcher()
	if err != nil {
		return err
	}
	defer session.Release()
	defer s.Release()
	if strings.ContainsAny(updateID, "'\"") {
		return fmt.Errorf("update ID %q is malformed", updateID)
	}
	criteria := "UpdateID='" + updateID + "'"
	if revision > 0 {
		criteria += " and RevisionNumber=" + strconv.Itoa(revision)
	}
	rv, err := oleutil.CallMethod(s, "Search", criteria)
	if err != nil {
		return fmt.Errorf("IUpdateSearcher.Search: %w", err)
	}
	result := rv.ToIDispatch()
	defer result.Release()
	updates, err := propDispatch(result, "Updates")
	if err != nil {
		return err
	}
	defer updates.Release()
	if propInt(updates, "Count") == 0 {
		return fmt.Errorf("Windows Update no longer offers update %s revision %d", updateID, revision)
	}
	u, err := propDispatch(updates, "Item", 0)
	if err != nil {
		return err
	}
	defer u.Release()
	coll, err := create("Microsoft.Update.UpdateColl")
	if err != nil {
		return err
	}
	defer coll.Release()
	if _, err := oleutil.CallMethod(coll, "Add", u); err != nil {
		return fmt.Errorf("IUpdateCollection.Add: %w", err)
	}
	return fn(session, coll, u)
}

// operation reads an IDownloadResult or IInstallationResult: the
// overall result code, the first update's HRESULT and, for an
// installation, whether a reboot is required.
func operation(res *ole.IDispatch, install bool) WUAOperation {
	op := WUAOperation{ResultCode: int(propInt(res, "ResultCode")), HResult: int32(propInt(res, "HResult"))}
	if ur, err := oleutil.CallMethod(res, "GetUpdateResult", 0); err == nil {
		if d := ur.ToIDispatch(); d != nil {
			if hr := int32(propInt(d, "HResult")); hr != 0 {
				op.HResult = hr
			}
			if install && propBool(d, "RebootRequired") {
				op.RebootRequired = true
			}
			d.Release()
		}
	}
	if install && propBool(res, "RebootRequired") {
		op.RebootRequired = true
	}
	return op
}

// Download runs IUpdateDownloader.Download for one update. The
// synchronous call reports no percentage: progress is called at 0 and
// 100.
func (ComWUA) Download(ctx context.Context, updateID string, revision int, progress func(int)) (WUAOperation, error) {
	var op WUAOperation
	err := withCOM(func() error {
		return update(updateID, revision, func(session, coll, _ *ole.IDispatch) error {
			dv, err := oleutil.CallMethod(session, "CreateUpdateDownloader")
			if err != nil {
				return absent("CreateUpdateDownloader", err)
			}
			dl := dv.ToIDispatch()
			defer dl.Release()
			if _, err := oleutil.PutProperty(dl, "Updates", coll); err != nil {
				return fmt.Errorf("IUpdateDownloader.Updates: %w", err)
			}
			progress(0)
			rv, err := oleutil.CallMethod(dl, "Download")
			if err != nil {
				return fmt.Errorf("IUpdateDownloader.Download: %w", err)
			}
			res := rv.ToIDispatch()
			defer res.Release()
			op = operation(res, false)
			progress(100)
			return ctx.Err()
		})
	})
	return op, err
}

// Install accepts the update's licence terms when it has any (an
// administrator approved the install) and runs IUpdateInstaller.Install
// for it. Like Download it reports progress at 0 and 100.
func (ComWUA) Install(ctx context.Context, updateID string, revision int, progress func(int)) (WUAOperation, error) {
	var op WUAOperation
	err := withCOM(func() error {
		return update(updateID, revision, func(session, coll, u *ole.IDispatch) error {
			if !propBool(u, "EulaAccepted") {
				if _, err := oleutil.CallMethod(u, "AcceptEula"); err != nil {
					return fmt.Errorf("IUpdate.AcceptEula: %w", err)
				}
			}
			iv, err := oleutil.CallMethod(session, "CreateUpdateInstaller")
			if err != nil {
				return absent("CreateUpdateInstaller", err)
			}
			in := iv.ToIDispatch()
			defer in.Release()
			if _, err := oleutil.PutProperty(in, "Updates", coll); err != nil {
				return fmt.Errorf("IUpdateInstaller.Updates: %w", err)
			}
			progress(0)
			rv, err := oleutil.CallMethod(in, "Install")
			if err != nil {
				return fmt.Errorf("IUpdateInstaller.Install: %w", err)
			}
			res := rv.ToIDispatch()
			defer res.Release()
			op = operation(res, true)
			progress(100)
			return ctx.Err()
		})
	})
	return op, err
}
