// Site worker slug rules (docs/api.md > Sites): 1 to 51 characters of
// lower-case letters, digits and '-', starting and ending with a letter or
// digit. The slug names the site's Temporal task queue `site:<slug>`.

export const SLUG_MAX = 51;
export const NAME_MAX = 100;
const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

/** A slug suggestion for a site name: "Head Office (Zürich)" -> "head-office-zurich". */
export function suggestSlug(name: string): string {
  const ascii = name.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
  let slug = ascii
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (slug.length > SLUG_MAX) slug = slug.slice(0, SLUG_MAX).replace(/-+$/, '');
  return slug;
}

export function checkSlug(slug: string): string | null {
  if (!slug) return 'Enter a slug.';
  if (slug.length > SLUG_MAX) return `At most ${SLUG_MAX} characters.`;
  if (!SLUG_PATTERN.test(slug)) return 'Lower-case letters, digits and hyphens, starting and ending with a letter or digit.';
  return null;
}

export function checkSiteName(name: string): string | null {
  const trimmed = name.trim();
  if (!trimmed) return 'Enter a name.';
  if (trimmed.length > NAME_MAX) return `At most ${NAME_MAX} characters.`;
  return null;
}
