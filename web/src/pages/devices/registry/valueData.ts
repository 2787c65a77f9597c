// The registry editor's typed values: how each type's data is shown and
// typed in, and the same checks the Engine applies (agent/registry,
// docs/api.md "Registry"), so a bad value is refused in the dialog with
// the reason instead of by a round trip.

/** The types the editor writes. */
export const WRITABLE_TYPES = ['REG_SZ', 'REG_EXPAND_SZ', 'REG_MULTI_SZ', 'REG_DWORD', 'REG_QWORD', 'REG_BINARY'] as const;
export type WritableType = (typeof WRITABLE_TYPES)[number];

export function isWritable(type: string): type is WritableType {
  return (WRITABLE_TYPES as readonly string[]).includes(type);
}

/** A value's data as one line for the grid. */
export function displayData(type: string, data: unknown): string {
  if (data === null || data === undefined) return '';
  if (Array.isArray(data)) return data.join(' | ');
  if (type === 'REG_DWORD' && typeof data === 'number') return `0x${data.toString(16).padStart(8, '0')} (${data})`;
  if (type === 'REG_BINARY' || !isWritable(type)) return String(data).replace(/(..)(?=.)/g, '$1 ');
  return String(data);
}

/** The editor's text for a value's data (REG_MULTI_SZ one string a line). */
export function editText(data: unknown): string {
  if (data === null || data === undefined) return '';
  if (Array.isArray(data)) return data.join('\n');
  return String(data);
}

const MAX_DWORD = 4294967295n;
const MAX_QWORD = 18446744073709551615n;

/**
 * Reads the editor's text as the wire data of type: { data } or { error }
 * saying what is wrong.
 */
export function parseData(type: WritableType, text: string): { data: unknown } | { error: string } {
  switch (type) {
    case 'REG_SZ':
    case 'REG_EXPAND_SZ':
      if (text.includes('\u0000')) return { error: 'A string cannot contain NUL.' };
      return { data: text };
    case 'REG_MULTI_SZ': {
      const lines = text.split('\n').map((l) => l.replace(/\r$/, ''));
      const list = lines.filter((l, i) => l !== '' || i < lines.length - 1);
      if (list.some((l) => l === '')) return { error: 'Empty lines are not allowed: an empty string ends a REG_MULTI_SZ.' };
      if (list.some((l) => l.includes('\u0000'))) return { error: 'A string cannot contain NUL.' };
      return { data: list };
    }
    case 'REG_DWORD':
    case 'REG_QWORD': {
      const t = text.trim();
      let n: bigint;
      try {
        if (!/^(0x[0-9a-f]+|[0-9]+)$/i.test(t)) throw new Error();
        n = BigInt(t);
      } catch {
        return { error: 'Enter a whole number, decimal or hexadecimal (0x…).' };
      }
      const max = type === 'REG_DWORD' ? MAX_DWORD : MAX_QWORD;
      if (n > max) return { error: `The largest ${type} is ${max} (0x${max.toString(16)}).` };
      // A QWORD travels as a decimal string: a JSON number loses precision above 2^53.
      return { data: type === 'REG_DWORD' ? Number(n) : n.toString(10) };
    }
    case 'REG_BINARY': {
      const hex = text.replace(/[\s,]/g, '');
      if (!/^[0-9a-f]*$/i.test(hex) || hex.length % 2 !== 0) {
        return { error: 'Enter bytes as hexadecimal pairs, e.g. 00 ff 10.' };
      }
      return { data: hex.toLowerCase() };
    }
  }
}

/** Checks a key name the way the Engine does. */
export function keyNameError(name: string): string | null {
  if (name === '') return 'A key needs a name.';
  if (name.includes('\\')) return 'A key name cannot contain a backslash.';
  if (name.length > 255) return 'A key name is at most 255 characters.';
  return null;
}
