package rfbserver

// Windows virtual-key codes the keysym table names (winuser.h).
const (
	VKBack     = 0x08
	VKTab      = 0x09
	VKReturn   = 0x0D
	VKShift    = 0x10
	VKControl  = 0x11
	VKMenu     = 0x12 // Alt
	VKPause    = 0x13
	VKCapital  = 0x14
	VKEscape   = 0x1B
	VKSpace    = 0x20
	VKPrior    = 0x21
	VKNext     = 0x22
	VKEnd      = 0x23
	VKHome     = 0x24
	VKLeft     = 0x25
	VKUp       = 0x26
	VKRight    = 0x27
	VKDown     = 0x28
	VKSnapshot = 0x2C
	VKInsert   = 0x2D
	VKDelete   = 0x2E
	VKLWin     = 0x5B
	VKRWin     = 0x5C
	VKApps     = 0x5D
	VKNumpad0  = 0x60
	VKMultiply = 0x6A
	VKAdd      = 0x6B
	VKSubtract = 0x6D
	VKDecimal  = 0x6E
	VKDivide   = 0x6F
	VKF1       = 0x70
	VKNumLock  = 0x90
	VKScroll   = 0x91
	VKLShift   = 0xA0
	VKRShift   = 0xA1
	VKLControl = 0xA2
	VKRControl = 0xA3
	VKLMenu    = 0xA4
	VKRMenu    = 0xA5
)

// special maps X11 keysyms (X11/keysymdef.h) of non-character keys to
// virtual keys.
var special = map[uint32]uint16{
	0xff08: VKBack, 0xff09: VKTab, 0xfe20: VKTab /* ISO_Left_Tab */, 0xff0d: VKReturn, 0xff13: VKPause,
	0xff14: VKScroll, 0xff1b: VKEscape, 0xffff: VKDelete, 0xff50: VKHome, 0xff51: VKLeft, 0xff52: VKUp,
	0xff53: VKRight, 0xff54: VKDown, 0xff55: VKPrior, 0xff56: VKNext, 0xff57: VKEnd, 0xff61: VKSnapshot,
	0xff63: VKInsert, 0xff67: VKApps, 0xff7f: VKNumLock, 0xffe5: VKCapital,
	0xffe1: VKLShift, 0xffe2: VKRShift, 0xffe3: VKLControl, 0xffe4: VKRControl,
	0xffe9: VKLMenu, 0xffea: VKRMenu, 0xffe7: VKLWin, 0xffe8: VKRWin, 0xffeb: VKLWin, 0xffec: VKRWin,
	0xfe03: VKRMenu, // ISO_Level3_Shift (AltGr)
	0xff8d: VKReturn, 0xffaa: VKMultiply, 0xffab: VKAdd, 0xffad: VKSubtract, 0xffae: VKDecimal, 0xffaf: VKDivide,
	0xff95: VKHome, 0xff96: VKLeft, 0xff97: VKUp, 0xff98: VKRight, 0xff99: VKDown, 0xff9a: VKPrior,
	0xff9b: VKNext, 0xff9c: VKEnd, 0xff9e: VKInsert, 0xff9f: VKDelete,
}

// Extended reports whether vk needs KEYEVENTF_EXTENDEDKEY (the keys
// outside the original PC keyboard's main block).
func Extended(vk uint16) bool {
	switch vk {
	case VKInsert, VKDelete, VKHome, VKEnd, VKPrior, VKNext, VKLeft, VKUp, VKRight, VKDown,
		VKRControl, VKRMenu, VKLWin, VKRWin, VKApps, VKDivide, VKNumLock, VKSnapshot:
		return true
	}
	return false
}

// Key is a keysym translated for SendInput: either a virtual key, or
// (for a character no virtual key names the same on every layout) a
// Unicode character sent with KEYEVENTF_UNICODE.
type Key struct {
	VK      uint16
	Unicode rune
}

// TranslateKeysym maps an X11 keysym to a virtual key or a character
// (ok false: a keysym the table does not know).
//
// Letters and digits are virtual keys (so Ctrl+C is Ctrl+C whatever the
// layout's character), F1–F24, keypad digits and the editing and
// modifier keys are virtual keys; every other Latin-1 or Unicode
// character (keysyms 0x20–0xff and 0x01000000+U) is sent as the
// character itself.
func TranslateKeysym(keysym uint32) (Key, bool) {
	switch {
	case keysym >= 'a' && keysym <= 'z':
		return Key{VK: uint16(keysym - 'a' + 'A')}, true
	case keysym >= 'A' && keysym <= 'Z', keysym >= '0' && keysym <= '9':
		return Key{VK: uint16(keysym)}, true
	case keysym == ' ':
		return Key{VK: VKSpace}, true
	case keysym >= 0xffbe && keysym <= 0xffd5: // F1..F24
		return Key{VK: uint16(VKF1 + keysym - 0xffbe)}, true
	case keysym >= 0xffb0 && keysym <= 0xffb9: // KP_0..KP_9
		return Key{VK: uint16(VKNumpad0 + keysym - 0xffb0)}, true
	}
	if vk, ok := special[keysym]; ok {
		return Key{VK: vk}, true
	}
	switch {
	case keysym >= 0x20 && keysym <= 0xff:
		return Key{Unicode: rune(keysym)}, true
	case keysym >= 0x01000100 && keysym <= 0x0110ffff:
		return Key{Unicode: rune(keysym - 0x01000000)}, true
	}
	return Key{}, false
}

// Keysyms of the Ctrl-Alt-Del chord.
const (
	KeysymDelete   = 0xffff
	KeysymKPDelete = 0xff9f
)
