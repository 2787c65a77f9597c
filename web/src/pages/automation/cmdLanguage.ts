import type { StreamParser } from '@codemirror/language';

// Windows cmd has no CodeMirror mode; this small tokenizer marks comments
// (REM, ::), labels, %variables%, strings and the built-in commands.
const KEYWORDS = new Set(
  'call cd chdir cls copy del dir echo endlocal erase exit for goto if in do else not exist defined errorlevel md mkdir move pause popd pushd rd rem ren rename rmdir set setlocal shift start title type ver'.split(
    ' ',
  ),
);

export const cmd: StreamParser<{ lineStart: boolean }> = {
  name: 'cmd',
  startState: () => ({ lineStart: true }),
  token(stream, state) {
    if (stream.sol()) state.lineStart = true;
    if (stream.eatSpace()) return null;
    const atStart = state.lineStart;
    state.lineStart = false;
    if (atStart && (stream.match(/^::/) || stream.match(/^rem\b/i))) {
      stream.skipToEnd();
      return 'comment';
    }
    if (atStart && stream.match(/^:\w+/)) return 'labelName';
    if (stream.match(/^%%?~?[\w]+%?/) || stream.match(/^![\w]+!/)) return 'variableName';
    if (stream.match(/^"(?:[^"])*"?/)) return 'string';
    if (stream.match(/^@?[A-Za-z_][\w.-]*/)) {
      const word = stream.current().replace(/^@/, '').toLowerCase();
      if (KEYWORDS.has(word)) return 'keyword';
      return null;
    }
    if (stream.match(/^\d+/)) return 'number';
    stream.next();
    return null;
  },
};
