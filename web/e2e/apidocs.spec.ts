import { expect, test } from '@playwright/test';

// The API reference at /api/docs: Scalar's viewer, bundled with the
// console, renders the document the Engine generates from its route table,
// under the Engine's strict CSP (no inline script, nothing from another
// origin) and without signing in.
test('the API reference renders the generated document within the CSP', async ({ page, baseURL }) => {
  const cspViolations: string[] = [];
  const pageErrors: string[] = [];
  const foreign: string[] = [];
  page.on('console', (msg) => {
    if (/Content Security Policy/i.test(msg.text())) cspViolations.push(msg.text());
  });
  page.on('pageerror', (err) => pageErrors.push(err.message));
  page.on('request', (req) => {
    const url = new URL(req.url());
    if (url.protocol.startsWith('http') && url.origin !== new URL(baseURL!).origin) foreign.push(req.url());
  });

  const res = await page.goto('/api/docs');
  expect(res?.status()).toBe(200);
  expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
  await expect(page).toHaveTitle('Cairn API reference');
  await expect(page.getByRole('heading', { name: 'Cairn Engine API' }).first()).toBeVisible();
  // Operations from the route table, grouped by area (the document's tags)
  // under their summaries, with their paths.
  await expect(page.getByText('Check readiness').first()).toBeVisible();
  await page.getByRole('button', { name: 'Open Group - Enrollment' }).click();
  await expect(page.getByText('/api/admin/device-approvals').first()).toBeVisible();
  await page.getByRole('button', { name: 'Open Group - Sites' }).click();
  await expect(page.getByText('/api/sites/{site_id}/auto-approval').first()).toBeVisible();

  expect(cspViolations).toEqual([]);
  expect(pageErrors).toEqual([]);
  expect(foreign).toEqual([]);
});
