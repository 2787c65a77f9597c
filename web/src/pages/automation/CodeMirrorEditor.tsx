import { useEffect, useRef } from 'react';
import Box from '@mui/material/Box';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { bracketMatching, defaultHighlightStyle, indentOnInput, StreamLanguage, syntaxHighlighting } from '@codemirror/language';
import { powerShell } from '@codemirror/legacy-modes/mode/powershell';
import { python } from '@codemirror/legacy-modes/mode/python';
import { shell } from '@codemirror/legacy-modes/mode/shell';
import { yaml } from '@codemirror/legacy-modes/mode/yaml';
import { Compartment, EditorState, type Extension } from '@codemirror/state';
import { drawSelection, EditorView, highlightActiveLine, keymap, lineNumbers } from '@codemirror/view';
import { cmd } from './cmdLanguage';
import type { CodeEditorProps, EditorLanguage } from './CodeEditor';

const LANGUAGES: Record<EditorLanguage, () => Extension> = {
  bash: () => StreamLanguage.define(shell),
  sh: () => StreamLanguage.define(shell),
  python: () => StreamLanguage.define(python),
  powershell: () => StreamLanguage.define(powerShell),
  cmd: () => StreamLanguage.define(cmd),
  yaml: () => StreamLanguage.define(yaml),
};

function languageFor(language: EditorLanguage | ''): Extension {
  return language ? LANGUAGES[language]() : [];
}

const theme = EditorView.theme({
  '&': { fontSize: '12.5px', border: '1px solid #e2e8f0', borderRadius: '6px', backgroundColor: '#fff' },
  '&.cm-focused': { outline: '2px solid rgba(15,118,110,0.45)' },
  '.cm-scroller': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace' },
  '.cm-gutters': { backgroundColor: '#f8fafc', color: '#94a3b8', borderRight: '1px solid #e2e8f0' },
});

/** CodeMirror 6 with the script language's highlighting. Loaded lazily by CodeEditor. */
export default function CodeMirrorEditor({ value, onChange, language, label, readOnly = false, minHeight = 260, error }: CodeEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const lang = useRef(new Compartment());
  const editable = useRef(new Compartment());
  const onChangeRef = useRef(onChange);
  onChangeRef.current = onChange;

  useEffect(() => {
    const v = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: value,
        extensions: [
          lineNumbers(),
          history(),
          drawSelection(),
          indentOnInput(),
          bracketMatching(),
          highlightActiveLine(),
          syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
          keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
          theme,
          EditorView.theme({ '.cm-content, .cm-gutter': { minHeight: `${minHeight}px` } }),
          EditorView.contentAttributes.of({ 'aria-label': label, 'data-language': language || 'plain' }),
          lang.current.of(languageFor(language)),
          editable.current.of([EditorState.readOnly.of(readOnly), EditorView.editable.of(!readOnly)]),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) onChangeRef.current?.(u.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = v;
    return () => {
      v.destroy();
      view.current = null;
    };
    // The view is created once; the effects below follow prop changes.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    view.current?.dispatch({ effects: lang.current.reconfigure(languageFor(language)) });
    view.current?.contentDOM.setAttribute('data-language', language || 'plain');
  }, [language]);

  useEffect(() => {
    view.current?.dispatch({
      effects: editable.current.reconfigure([EditorState.readOnly.of(readOnly), EditorView.editable.of(!readOnly)]),
    });
  }, [readOnly]);

  // A value set from outside (loading a version, say) replaces the document.
  useEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== value) {
      v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
    }
  }, [value]);

  return (
    <Box
      ref={host}
      data-testid="code-editor"
      sx={{ '& .cm-editor': error ? { borderColor: 'error.main' } : {}, maxHeight: 520, overflow: 'auto' }}
    />
  );
}
