// The device filter language as the console edits it (docs/api.md "Device
// filters"). A tree is a group of conditions and nested groups; node paths are
// the API's JSON paths (`filter.conditions[2].value`), so validation errors
// from the Engine land on the node they name.
import type { FilterCondition, FilterFieldMeta, FilterGroup, FilterNode, FilterValueType } from '../../api/types';
import type { Schema } from '../../api/typed';

export const ROOT_PATH = 'filter';
export const MAX_DEPTH = 5;
export const MAX_CHILDREN = 50;

export const isGroup = (n: FilterNode): n is FilterGroup => Array.isArray((n as FilterGroup).conditions);

export const emptyGroup = (): FilterGroup => ({ match: 'all', conditions: [] });

/**
 * A saved tree as the Engine sends it (one node shape with the fields of a
 * group or a condition) as the console's group and condition types. The
 * Engine only stores trees that parsed, so the root is a group.
 */
export function groupOf(node: Schema<'Node'>): FilterGroup {
  return { match: node.match === 'any' ? 'any' : 'all', conditions: (node.conditions ?? []).map(nodeOf) };
}

function nodeOf(node: Schema<'Node'>): FilterNode {
  if (Array.isArray(node.conditions)) return groupOf(node);
  const c: FilterCondition = { field: node.field ?? '', op: node.op ?? '' };
  if (node.key !== undefined && node.key !== null) c.key = node.key as number | string;
  if (node.value !== undefined) c.value = node.value;
  return c;
}

export const childPath = (path: string, i: number) => `${path}.conditions[${i}]`;

/** Operators that take no value. */
const NO_VALUE_OPS = new Set(['is_empty', 'is_not_empty', 'installed', 'not_installed', 'never']);

export const OP_LABELS: Record<string, string> = {
  in: 'is one of',
  not_in: 'is not one of',
  is: 'is',
  is_not: 'is not',
  equals: 'equals',
  not_equals: 'does not equal',
  contains: 'contains',
  not_contains: 'does not contain',
  starts_with: 'starts with',
  ends_with: 'ends with',
  is_empty: 'is empty',
  is_not_empty: 'is not empty',
  version_eq: 'version =',
  version_lt: 'version <',
  version_lte: 'version ≤',
  version_gt: 'version >',
  version_gte: 'version ≥',
  within_last: 'within the last',
  not_within_last: 'not within the last',
  before: 'before',
  after: 'after',
  never: 'never',
  eq: '=',
  ne: '≠',
  lt: '<',
  lte: '≤',
  gt: '>',
  gte: '≥',
  in_cidr: 'in network',
  not_in_cidr: 'not in network',
  installed: 'is installed',
  not_installed: 'is not installed',
};

export const opLabel = (op: string) => OP_LABELS[op] ?? op.replaceAll('_', ' ');

/** What kind of value input the operator needs; a field's ops may differ (last_seen: seconds, a time or nothing). */
export function valueKind(field: FilterFieldMeta | undefined, op: string): FilterValueType {
  if (!field) return 'none';
  const declared = field.op_value_types?.[op] as FilterValueType | undefined;
  if (declared) return declared;
  if (NO_VALUE_OPS.has(op)) return 'none';
  if (op === 'before' || op === 'after') return 'time';
  if (op === 'within_last' || op === 'not_within_last') return 'duration_seconds';
  if (op.startsWith('version_')) return 'version';
  if (op === 'in_cidr' || op === 'not_in_cidr') return 'cidr';
  return field.value_type;
}

/** A fresh condition on `field` with its first operator and an empty value. */
export function newCondition(field: FilterFieldMeta): FilterCondition {
  const op = field.ops[0] ?? '';
  const c: FilterCondition = { field: field.field, op };
  const kind = valueKind(field, op);
  if (kind === 'site_ids') c.value = [];
  else if (kind !== 'none') c.value = '';
  return c;
}

/** The condition after choosing another operator: the value is kept when it still fits. */
export function withOp(c: FilterCondition, field: FilterFieldMeta | undefined, op: string): FilterCondition {
  const before = valueKind(field, c.op);
  const after = valueKind(field, op);
  const next: FilterCondition = { field: c.field, op };
  if (c.key !== undefined) next.key = c.key;
  if (after === 'none') return next;
  next.value = before === after ? c.value : after === 'site_ids' ? [] : '';
  return next;
}

/** Indexes from the root to the node at `path` (`filter.conditions[1].conditions[0]` → [1, 0]). */
export function pathIndexes(path: string): number[] {
  return [...path.matchAll(/conditions\[(\d+)\]/g)].map((m) => Number(m[1]));
}

/** The tree with the node at `indexes` replaced by `fn(node)`; null from `fn` removes it. */
export function updateAt(root: FilterGroup, indexes: number[], fn: (n: FilterNode) => FilterNode | null): FilterGroup {
  if (indexes.length === 0) {
    const r = fn(root);
    return r && isGroup(r) ? r : root;
  }
  const [i, ...rest] = indexes;
  const conditions: FilterNode[] = [];
  root.conditions.forEach((child, j) => {
    if (j !== i) {
      conditions.push(child);
      return;
    }
    if (rest.length === 0) {
      const r = fn(child);
      if (r) conditions.push(r);
      return;
    }
    conditions.push(isGroup(child) ? updateAt(child, rest, fn) : child);
  });
  return { ...root, conditions };
}

export function countConditions(n: FilterNode): number {
  return isGroup(n) ? n.conditions.reduce((sum, c) => sum + countConditions(c), 0) : 1;
}

/**
 * The tree as the API takes it: values coerced to their type (numbers,
 * seconds), no value on operators without one. Inputs hold strings while
 * being typed.
 */
export function toApiTree(root: FilterGroup, fields: readonly FilterFieldMeta[]): FilterGroup {
  const byName = new Map(fields.map((f) => [f.field, f]));
  const convert = (n: FilterNode): FilterNode => {
    if (isGroup(n)) return { match: n.match, conditions: n.conditions.map(convert) };
    const field = byName.get(n.field);
    const out: FilterCondition = { field: n.field, op: n.op };
    if (n.key !== undefined && n.key !== '') out.key = field?.key_type === 'metadata_field' ? (toNumber(n.key) as number | string) : n.key;
    const kind = valueKind(field, n.op);
    if (kind === 'none') return out;
    if (kind === 'number' || kind === 'duration_seconds') out.value = toNumber(n.value);
    else if (kind === 'site_ids') out.value = Array.isArray(n.value) ? n.value.map(toNumber) : [];
    else out.value = n.value ?? '';
    return out;
  };
  return convert(root) as FilterGroup;
}

function toNumber(v: unknown): unknown {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  // Left as typed: the Engine names the node whose value is not a number.
  return v;
}

/**
 * Problems the console can tell before asking the Engine: an empty group or
 * a condition without a field. Keys are the API's paths.
 */
export function localErrors(root: FilterGroup): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (n: FilterNode, path: string) => {
    if (isGroup(n)) {
      if (n.conditions.length === 0) out[`${path}.conditions`] = 'Add a condition or a group.';
      n.conditions.forEach((c, i) => walk(c, childPath(path, i)));
    } else if (!n.field) {
      out[`${path}.field`] = 'Choose a field.';
    }
  };
  walk(root, ROOT_PATH);
  return out;
}

/**
 * Errors for the node at `path` itself (its own keys: `path`, `path.field`,
 * `path.op`, `path.key`, `path.value`, `path.match`, `path.conditions`), not
 * those of its children.
 */
export function nodeErrors(errors: Record<string, string>, path: string): string[] {
  const own = /^(\.(field|op|key|value|match|conditions))?$/;
  const out: string[] = [];
  for (const [k, v] of Object.entries(errors)) {
    if (k.startsWith(path) && own.test(k.slice(path.length))) out.push(v);
  }
  return out;
}

/** The error for one part of a condition (`value`, `op`...). */
export const partError = (errors: Record<string, string>, path: string, part: string): string | undefined =>
  errors[`${path}.${part}`];

/**
 * `tree` narrowed by a hostname search, so the grid asks one question. An
 * all-group takes the condition as another child; anything else is wrapped.
 */
export function withHostnameSearch(tree: FilterGroup | null, q: string): FilterGroup | null {
  const text = q.trim();
  if (!text) return tree;
  const cond: FilterCondition = { field: 'hostname', op: 'contains', value: text };
  if (!tree) return { match: 'all', conditions: [cond] };
  if (tree.match === 'all' && tree.conditions.length < MAX_CHILDREN) return { ...tree, conditions: [...tree.conditions, cond] };
  return { match: 'all', conditions: [tree, cond] };
}

/** JSON with object keys sorted: the Engine stores trees as jsonb, which reorders keys. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** Structural equality of two trees (used to tell an applied saved filter from an edited copy). */
export const sameTree = (a: FilterGroup | null, b: FilterGroup | null) => canonical(a) === canonical(b);
