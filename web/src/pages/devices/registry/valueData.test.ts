import { describe, expect, it } from 'vitest';
import { displayData, editText, keyNameError, parseData } from './valueData';

describe('registry value data', () => {
  it('reads each type from the editor as the Engine takes it', () => {
    expect(parseData('REG_SZ', 'hello')).toEqual({ data: 'hello' });
    expect(parseData('REG_EXPAND_SZ', '%SystemRoot%')).toEqual({ data: '%SystemRoot%' });
    expect(parseData('REG_MULTI_SZ', 'a\nb\n')).toEqual({ data: ['a', 'b'] });
    expect(parseData('REG_MULTI_SZ', '')).toEqual({ data: [] });
    expect(parseData('REG_DWORD', '4294967295')).toEqual({ data: 4294967295 });
    expect(parseData('REG_DWORD', '0x10')).toEqual({ data: 16 });
    expect(parseData('REG_QWORD', '18446744073709551615')).toEqual({ data: '18446744073709551615' });
    expect(parseData('REG_QWORD', '0xffffffffffffffff')).toEqual({ data: '18446744073709551615' });
    expect(parseData('REG_BINARY', '00 FF, 10')).toEqual({ data: '00ff10' });
  });

  it('refuses data that does not fit the type, saying why', () => {
    expect(parseData('REG_MULTI_SZ', 'a\n\nb')).toHaveProperty('error');
    expect(parseData('REG_DWORD', '4294967296')).toEqual({ error: expect.stringContaining('4294967295') });
    expect(parseData('REG_DWORD', '-1')).toHaveProperty('error');
    expect(parseData('REG_DWORD', '1.5')).toHaveProperty('error');
    expect(parseData('REG_QWORD', '18446744073709551616')).toHaveProperty('error');
    expect(parseData('REG_BINARY', 'abc')).toHaveProperty('error');
    expect(parseData('REG_BINARY', 'zz')).toHaveProperty('error');
    expect(parseData('REG_SZ', 'a\u0000b')).toHaveProperty('error');
  });

  it('shows and edits stored data', () => {
    expect(displayData('REG_DWORD', 16)).toBe('0x00000010 (16)');
    expect(displayData('REG_BINARY', '00ff10')).toBe('00 ff 10');
    expect(displayData('REG_MULTI_SZ', ['a', 'b'])).toBe('a | b');
    expect(displayData('REG_LINK', 'abcd')).toBe('ab cd');
    expect(editText(['a', 'b'])).toBe('a\nb');
    expect(editText('18446744073709551615')).toBe('18446744073709551615');
  });

  it('checks key names', () => {
    expect(keyNameError('Vendor')).toBeNull();
    expect(keyNameError('')).not.toBeNull();
    expect(keyNameError('a\\b')).not.toBeNull();
    expect(keyNameError('k'.repeat(256))).not.toBeNull();
  });
});
