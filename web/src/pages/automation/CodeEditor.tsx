import { lazy, Suspense } from 'react';
import Box from '@mui/material/Box';
import type { ScriptLanguage } from '../../api/types';
import { mono } from '../devices/parts';

// CodeMirror is loaded the first time an editor opens; until then (and if it
// cannot load) a plain text area edits the same value.
const CodeMirrorEditor = lazy(() => import('./CodeMirrorEditor'));

/** What an editor highlights: a script language, or YAML (Ansible playbooks). */
export type EditorLanguage = ScriptLanguage | 'yaml';

export interface CodeEditorProps {
  value: string;
  onChange?: (value: string) => void;
  language: EditorLanguage | '';
  /** Accessible name of the editing area. */
  label: string;
  readOnly?: boolean;
  minHeight?: number;
  error?: boolean;
}

export function PlainEditor({ value, onChange, label, readOnly, minHeight = 260, error }: CodeEditorProps) {
  return (
    <Box
      component="textarea"
      aria-label={label}
      value={value}
      readOnly={readOnly}
      spellCheck={false}
      onChange={(e) => onChange?.((e.target as HTMLTextAreaElement).value)}
      sx={{
        ...mono,
        width: '100%',
        minHeight,
        p: 1,
        boxSizing: 'border-box',
        border: 1,
        borderColor: error ? 'error.main' : 'divider',
        borderRadius: 1,
        resize: 'vertical',
      }}
    />
  );
}

export function CodeEditor(props: CodeEditorProps) {
  return (
    <Suspense fallback={<PlainEditor {...props} />}>
      <CodeMirrorEditor {...props} />
    </Suspense>
  );
}
