package rdp

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	ole "github.com/go-ole/go-ole"
	"github.com/go-ole/go-ole/oleutil"
)

// comFirewall is Windows Defender Firewall through the HNetCfg.FwPolicy2
// COM object (INetFwPolicy2.Rules): locale-independent, where netsh's
// output is translated.
type comFirewall struct{}

// INetFwRule constants.
const (
	fwIPProtocolTCP = 6
	fwIPProtocolUDP = 17
	fwDirectionIn   = 1
	fwDirectionOut  = 2
	fwActionBlock   = 0
	fwActionAllow   = 1
	fwProfileAll    = 0x7FFFFFFF
)

func (comFirewall) List(_ context.Context, name string) ([]FirewallRule, error) {
	var out []FirewallRule
	err := withRules(func(rules *ole.IDispatch) error {
		return oleutil.ForEach(rules, func(v *ole.VARIANT) error {
			r := v.ToIDispatch()
			if r == nil {
				return nil
			}
			if n := dispString(r, "Name"); n == name {
				out = append(out, readRule(r))
			}
			return nil
		})
	})
	return out, err
}

func readRule(r *ole.IDispatch) FirewallRule {
	fr := FirewallRule{Name: dispString(r, "Name"), LocalPort: dispString(r, "LocalPorts"),
		LocalAddress: dispString(r, "LocalAddresses"), RemoteAddress: dispString(r, "RemoteAddresses"),
		Enabled: dispBool(r, "Enabled")}
	switch p := dispInt(r, "Protocol"); p {
	case fwIPProtocolTCP:
		fr.Protocol = "TCP"
	case fwIPProtocolUDP:
		fr.Protocol = "UDP"
	default:
		fr.Protocol = strconv.FormatInt(p, 10)
	}
	switch dispInt(r, "Direction") {
	case fwDirectionIn:
		fr.Direction = "in"
	case fwDirectionOut:
		fr.Direction = "out"
	}
	switch dispInt(r, "Action") {
	case fwActionAllow:
		fr.Action = "allow"
	case fwActionBlock:
		fr.Action = "block"
	}
	return fr
}

func (comFirewall) Add(_ context.Context, fr FirewallRule) error {
	if !strings.EqualFold(fr.Protocol, "TCP") || fr.Direction != "in" || fr.Action != "allow" {
		return fmt.Errorf("only inbound allowed TCP rules are made (got %s %s %s)", fr.Direction, fr.Action, fr.Protocol)
	}
	return withRules(func(rules *ole.IDispatch) error {
		unk, err := oleutil.CreateObject("HNetCfg.FWRule")
		if err != nil {
			return fmt.Errorf("create HNetCfg.FWRule: %w", err)
		}
		defer unk.Release()
		r, err := unk.QueryInterface(ole.IID_IDispatch)
		if err != nil {
			return err
		}
		defer r.Release()
		// Protocol before the ports: INetFwRule refuses ports without it.
		for _, p := range []struct {
			name  string
			value any
		}{
			{"Name", fr.Name},
			{"Description", "Cairn: RDP from the Engine through the managed tunnel only (agent behaviour 14)"},
			{"Protocol", fwIPProtocolTCP},
			{"LocalPorts", fr.LocalPort},
			{"LocalAddresses", fr.LocalAddress},
			{"RemoteAddresses", fr.RemoteAddress},
			{"Direction", fwDirectionIn},
			{"Action", fwActionAllow},
			{"Profiles", fwProfileAll},
			{"Enabled", fr.Enabled},
		} {
			v, err := oleutil.PutProperty(r, p.name, p.value)
			if err != nil {
				return fmt.Errorf("set the rule's %s: %w", p.name, err)
			}
			_ = v.Clear()
		}
		v, err := oleutil.CallMethod(rules, "Add", r)
		if err != nil {
			return fmt.Errorf("add the rule: %w", err)
		}
		_ = v.Clear()
		return nil
	})
}

// Remove removes the rules named name one by one (INetFwRules.Remove
// takes the first of that name).
func (f comFirewall) Remove(ctx context.Context, name string) error {
	have, err := f.List(ctx, name)
	if err != nil {
		return err
	}
	return withRules(func(rules *ole.IDispatch) error {
		for range have {
			v, err := oleutil.CallMethod(rules, "Remove", name)
			if err != nil {
				return fmt.Errorf("remove the rule: %w", err)
			}
			_ = v.Clear()
		}
		return nil
	})
}

// withRules runs fn with INetFwPolicy2.Rules on a locked thread with COM
// initialised.
func withRules(fn func(rules *ole.IDispatch) error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := ole.CoInitializeEx(0, ole.COINIT_APARTMENTTHREADED); err != nil {
			if oe, ok := err.(*ole.OleError); !ok || oe.Code() != 1 {
				done <- fmt.Errorf("CoInitializeEx: %w", err)
				return
			}
		}
		defer ole.CoUninitialize()
		unk, err := oleutil.CreateObject("HNetCfg.FwPolicy2")
		if err != nil {
			done <- fmt.Errorf("create HNetCfg.FwPolicy2: %w", err)
			return
		}
		defer unk.Release()
		pol, err := unk.QueryInterface(ole.IID_IDispatch)
		if err != nil {
			done <- err
			return
		}
		defer pol.Release()
		v, err := oleutil.GetProperty(pol, "Rules")
		if err != nil {
			done <- fmt.Errorf("the firewall's rules: %w", err)
			return
		}
		rules := v.ToIDispatch()
		if rules == nil {
			done <- fmt.Errorf("the firewall's rules are not an object")
			return
		}
		defer rules.Release()
		done <- fn(rules)
	}()
	return <-done
}

func dispString(d *ole.IDispatch, name string) string {
	v, err := oleutil.GetProperty(d, name)
	if err != nil {
		return ""
	}
	defer v.Clear()
	s, _ := v.Value().(string)
	return s
}

func dispBool(d *ole.IDispatch, name string) bool {
	v, err := oleutil.GetProperty(d, name)
	if err != nil {
		return false
	}
	defer v.Clear()
	b, _ := v.Value().(bool)
	return b
}

func dispInt(d *ole.IDispatch, name string) int64 {
	v, err := oleutil.GetProperty(d, name)
	if err != nil {
		return -1
	}
	defer v.Clear()
	switch n := v.Value().(type) {
	case int32:
		return int64(n)
	case int64:
		return n
	case int16:
		return int64(n)
	case uint32:
		return int64(n)
	case int:
		return int64(n)
	}
	return -1
}
