import { describe, expect, it } from 'vitest';
import type { FilterFieldMeta, FilterGroup } from '../../api/types';
import { localErrors, nodeErrors, pathIndexes, sameTree, toApiTree, updateAt, valueKind, withHostnameSearch, withOp } from './filterTree';

const F = (field: string, value_type: FilterFieldMeta['value_type'], ops: string[], key_type: FilterFieldMeta['key_type'] = null): FilterFieldMeta => ({
  field,
  label: field,
  group: 'x',
  ops,
  value_type,
  key_type,
  op_value_types: {},
  values: [],
});
const FIELDS = [
  F('hostname', 'string', ['contains', 'is_empty']),
  F('cpu_cores', 'number', ['gte']),
  F('site', 'site_ids', ['in']),
  F('last_seen', 'duration_seconds', ['within_last', 'before', 'never']),
  F('metadata', 'string', ['equals'], 'metadata_field'),
  F('software', 'version', ['installed', 'version_gte'], 'software_name'),
];

describe('the filter tree', () => {
  it('reads node paths and edits the node they name', () => {
    expect(pathIndexes('filter.conditions[1].conditions[0]')).toEqual([1, 0]);
    const tree: FilterGroup = { match: 'all', conditions: [{ field: 'a', op: 'x' }, { match: 'any', conditions: [{ field: 'b', op: 'y' }] }] };
    const edited = updateAt(tree, [1, 0], (n) => ({ ...n, op: 'z' }));
    expect(edited).toEqual({ match: 'all', conditions: [{ field: 'a', op: 'x' }, { match: 'any', conditions: [{ field: 'b', op: 'z' }] }] });
    expect(updateAt(tree, [0], () => null).conditions).toHaveLength(1);
    expect(tree.conditions).toHaveLength(2);
  });

  it('converts typed values to what the API takes', () => {
    const tree: FilterGroup = {
      match: 'any',
      conditions: [
        { field: 'cpu_cores', op: 'gte', value: '4' },
        { field: 'site', op: 'in', value: ['2', 3] },
        { field: 'last_seen', op: 'never', value: 'left over' },
        { field: 'metadata', op: 'equals', key: '12', value: 'rack' },
        { field: 'software', op: 'installed', key: 'nginx', value: '' },
        { field: 'hostname', op: 'is_empty', value: 'x' },
      ],
    };
    expect(toApiTree(tree, FIELDS)).toEqual({
      match: 'any',
      conditions: [
        { field: 'cpu_cores', op: 'gte', value: 4 },
        { field: 'site', op: 'in', value: [2, 3] },
        { field: 'last_seen', op: 'never' },
        { field: 'metadata', op: 'equals', key: 12, value: 'rack' },
        { field: 'software', op: 'installed', key: 'nginx' },
        { field: 'hostname', op: 'is_empty' },
      ],
    });
  });

  it('picks the value input by operator', () => {
    const seen = FIELDS[3];
    expect(valueKind(seen, 'within_last')).toBe('duration_seconds');
    expect(valueKind(seen, 'before')).toBe('time');
    expect(valueKind(seen, 'never')).toBe('none');
    expect(valueKind(FIELDS[5], 'version_gte')).toBe('version');
    // The Engine's per-op types win over the console's own rules.
    expect(valueKind({ ...FIELDS[0], op_value_types: { contains: 'version' } }, 'contains')).toBe('version');
    expect(withOp({ field: 'last_seen', op: 'within_last', value: 60 }, seen, 'before')).toEqual({ field: 'last_seen', op: 'before', value: '' });
    expect(withOp({ field: 'last_seen', op: 'within_last', value: 60 }, seen, 'never')).toEqual({ field: 'last_seen', op: 'never' });
  });

  it('finds local problems and sorts errors to their node', () => {
    const tree: FilterGroup = { match: 'all', conditions: [{ field: '', op: '' }, { match: 'any', conditions: [] }] };
    expect(localErrors(tree)).toEqual({
      'filter.conditions[0].field': 'Choose a field.',
      'filter.conditions[1].conditions': 'Add a condition or a group.',
    });
    const errors = { 'filter.conditions[1].value': 'bad', 'filter.conditions[10].op': 'other', 'filter.conditions[1].conditions[0].op': 'deeper' };
    expect(nodeErrors(errors, 'filter.conditions[1]')).toEqual(['bad']);
  });

  it('adds the hostname search to the filter', () => {
    const cond = { field: 'hostname', op: 'contains', value: 'web' };
    expect(withHostnameSearch(null, ' web ')).toEqual({ match: 'all', conditions: [cond] });
    const all: FilterGroup = { match: 'all', conditions: [{ field: 'os', op: 'contains', value: 'x' }] };
    expect(withHostnameSearch(all, 'web')).toEqual({ match: 'all', conditions: [...all.conditions, cond] });
    const any: FilterGroup = { match: 'any', conditions: [{ field: 'os', op: 'contains', value: 'x' }] };
    expect(withHostnameSearch(any, 'web')).toEqual({ match: 'all', conditions: [any, cond] });
    expect(withHostnameSearch(any, '  ')).toBe(any);
  });

  it('compares trees whatever the order of their keys', () => {
    const a: FilterGroup = { match: 'all', conditions: [{ field: 'metadata', op: 'equals', key: 12, value: 'x' }] };
    const b = JSON.parse('{"conditions":[{"op":"equals","key":12,"field":"metadata","value":"x"}],"match":"all"}') as FilterGroup;
    expect(sameTree(a, b)).toBe(true);
    expect(sameTree(a, { ...b, match: 'any' })).toBe(false);
  });
});
