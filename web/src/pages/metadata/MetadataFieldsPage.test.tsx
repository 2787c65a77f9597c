import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { MetadataFieldDefinition, User } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { fill } from '../../test/codeEditor';
import { ADMIN, fakeEngine, validationFailed, type RecordedCall } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { WithToasts } from '../../test/toasts';
import MetadataFieldsPage from './MetadataFieldsPage';

const OPERATOR: User = { ...ADMIN, username: 'olga', role: 'operator' };

function definitions(extra: Record<number, Partial<MetadataFieldDefinition>> = {}): MetadataFieldDefinition[] {
  return Array.from({ length: 500 }, (_, i) => {
    const n = i + 1;
    const description = n === 1 ? 'Server Roles' : n === 2 ? 'Bitlocker Drive Encryption' : n <= 10 ? 'Reserved' : '';
    return {
      field_number: n,
      description,
      reserved: n <= 10,
      linked_assembly_id: n === 1 ? 7 : n === 2 ? 8 : null,
      updated_at: null,
      updated_by: '',
      ...extra[n],
    };
  });
}

const LABELLED = { 12: { description: 'Rack', updated_at: '2026-11-21T10:00:00Z', updated_by: 'admin' } };

function renderPage(user: User = ADMIN) {
  return renderWithProviders(
    <SessionContext.Provider value={{ user, signOut: async () => {} }}>
      <WithToasts>
        <MetadataFieldsPage />
      </WithToasts>
    </SessionContext.Provider>,
    { route: '/metadata' },
  );
}

function engine(puts: Record<string, unknown> = {}) {
  let rows = definitions(LABELLED);
  return fakeEngine({
    'GET /api/metadata_fields': () => ({ body: { fields: rows, value_max_length: 1024 } }),
    'GET /api/assemblies': {
      body: {
        assemblies: [
          { id: 7, name: 'Server Roles inventory', kind: 'script', language: 'powershell', description: '', version: 1 },
          { id: 8, name: 'Bitlocker status', kind: 'script', language: 'powershell', description: '', version: 1 },
        ],
      },
    },
    'PUT /api/metadata_fields/12': (call: RecordedCall) => {
      const description = (call.body as { description: string }).description;
      const row = { ...rows[11], description, updated_at: '2026-11-22T12:00:00Z', updated_by: 'admin' };
      rows = rows.map((r) => (r.field_number === 12 ? row : r));
      return { body: row };
    },
    ...(puts as Record<string, never>),
  });
}

const search = () => screen.getByRole('searchbox', { name: 'Search fields' });

afterEach(() => vi.unstubAllGlobals());

describe('MetadataFieldsPage', () => {
  it('lists the definitions with Modified and Source, and reserved rows read-only with their assembly', async () => {
    const user = userEvent.setup({ delay: null });
    engine();
    renderPage();
    expect(await screen.findByTestId('definitions-count')).toHaveTextContent('1 labelled, 500 fields; values up to 1024 characters');
    const roles = (await screen.findByText('Server Roles')).closest('[role="row"]') as HTMLElement;
    expect(within(roles).getByLabelText('Reserved')).toBeInTheDocument();
    expect(within(roles).getByText('Read-only')).toBeInTheDocument();
    expect(within(roles).queryByRole('button', { name: /Rename/ })).not.toBeInTheDocument();
    const link = await within(roles).findByRole('link', { name: 'Server Roles inventory' });
    expect(link).toHaveAttribute('href', '/automation?assembly=7');

    await fill(user, search(), 'Rack');
    const rack = (await screen.findByText('Rack')).closest('[role="row"]') as HTMLElement;
    expect(rack).toHaveTextContent('12');
    expect(rack).toHaveTextContent('admin');
    expect(rack).toHaveTextContent(/2026|21/);
    expect(within(rack).getByRole('button', { name: 'Rename field 12' })).toBeInTheDocument();
  });

  it('narrows to labelled fields', async () => {
    const user = userEvent.setup({ delay: null });
    engine();
    renderPage();
    await screen.findByTestId('definitions-count');
    await user.click(screen.getByRole('switch', { name: 'Only labelled fields' }));
    await waitFor(() => expect(screen.getAllByRole('row').filter((r) => r.getAttribute('row-id'))).toHaveLength(3));
    expect(screen.getByText('Rack')).toBeInTheDocument();
    expect(screen.queryByText('Reserved')).not.toBeInTheDocument();
  });

  it('renames a label as an Admin, with the counter and the 120-character limit', async () => {
    const user = userEvent.setup({ delay: null });
    const fake = engine();
    renderPage();
    await screen.findByTestId('definitions-count');
    await fill(user, search(), 'Rack');
    await user.click(await screen.findByRole('button', { name: 'Rename field 12' }));
    const dialog = await screen.findByRole('dialog', { name: 'Rename field 12' });
    const input = within(dialog).getByRole('textbox', { name: 'Label' });
    expect(within(dialog).getByTestId('label-counter')).toHaveTextContent('4 / 120');
    await fill(user, input, 'y'.repeat(121));
    expect(dialog).toHaveTextContent('At most 120 characters.');
    expect(within(dialog).getByRole('button', { name: 'Save' })).toBeDisabled();

    await fill(user, input, '  Rack position  ');
    expect(within(dialog).getByTestId('label-counter')).toHaveTextContent('13 / 120');
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(fake.callsTo('PUT', '/api/metadata_fields/12').map((c) => c.body)).toEqual([{ description: 'Rack position' }]);
    await fill(user, search(), 'Rack position');
    expect(await screen.findByText('Rack position')).toBeInTheDocument();
  });

  it('shows the API errors of a rename', async () => {
    const user = userEvent.setup({ delay: null });
    engine({ 'PUT /api/metadata_fields/12': validationFailed({ description: 'must not contain control characters' }) });
    renderPage();
    await screen.findByTestId('definitions-count');
    await fill(user, search(), 'Rack');
    await user.click(await screen.findByRole('button', { name: 'Rename field 12' }));
    const dialog = await screen.findByRole('dialog', { name: 'Rename field 12' });
    await fill(user, within(dialog).getByRole('textbox', { name: 'Label' }), 'Rack\tB');
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    expect(await within(dialog).findByText('must not contain control characters')).toBeInTheDocument();
    expect(within(dialog).getByRole('textbox', { name: 'Label' })).toHaveAttribute('aria-invalid', 'true');
  });

  it('is read-only for operators', async () => {
    const user = userEvent.setup({ delay: null });
    engine();
    renderPage(OPERATOR);
    expect(await screen.findByTestId('read-only-note')).toHaveTextContent('Only administrators change labels');
    await screen.findByTestId('definitions-count');
    await fill(user, search(), 'Rack');
    const rack = (await screen.findByText('Rack')).closest('[role="row"]') as HTMLElement;
    expect(within(rack).queryByRole('button')).not.toBeInTheDocument();
    expect(screen.queryByRole('button', { name: /Rename field/ })).not.toBeInTheDocument();
  });
});
