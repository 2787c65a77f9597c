import { useState } from 'react';

export const codesKey = (siteId: number) => ['enrollment-codes', siteId] as const;
export const APPROVALS_QUERY = ['device-approvals'] as const;

/** How often the dialog rereads the approval queue: no event announces a new request. */
export const APPROVALS_POLL_MS = 10_000;

/** Copies to the clipboard; `copied` is the key of what was copied last, for 1.5 s. */
export function useCopy() {
  const [copied, setCopied] = useState<string | null>(null);
  const [failed, setFailed] = useState(false);
  const copy = async (key: string, text: string) => {
    try {
      await navigator.clipboard.writeText(text);
      setFailed(false);
      setCopied(key);
      window.setTimeout(() => setCopied((c) => (c === key ? null : c)), 1500);
    } catch {
      // Clipboard needs a secure context; the text stays selectable.
      setFailed(true);
    }
  };
  return { copied, failed, copy };
}

/** The first group of a code, to tell codes apart in labels. */
export const codeLabel = (code: { id: number; code: string | null }) => (code.code ? code.code.split('-')[0] : `#${code.id}`);
