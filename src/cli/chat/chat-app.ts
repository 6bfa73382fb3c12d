// The `dh chat` screen on Ink: the transcript printed once into the terminal's scrollback, then a live area
// that redraws (the step streaming now and lines that came meanwhile, each queue, what is still being sent, a
// call awaiting approval, the input, the keys). Keys go to the controller; Esc acts after ESC_DELAY_MS alone.
import { Box, Static, Text, useApp, useInput } from 'ink';
import { createElement as h, useEffect, useRef, useState, type ReactElement } from 'react';
import type { ChatLine, LineKind } from './chat-model.js';
import type { ChatController } from './chat-controller.js';
import { EMPTY_INPUT, editInput, fateOf, messageText, parseSlash, type InputState } from './chat-input.js';

/**
 * Terminals send Alt+key as Esc followed by the key, and over SSH the two may arrive apart: an Esc is an
 * interrupt only when no key follows it within this time.
 */
export const ESC_DELAY_MS = 250;

const COLOR: Readonly<Record<LineKind, string | undefined>> = {
  user: 'cyan',
  assistant: undefined,
  tool: 'gray',
  note: 'gray',
  warn: 'yellow',
};

/** The bracketed-paste markers as useInput passes them (without their leading Esc). */
const PASTE_START = '[200~';
const PASTE_END = '[201~';

const QUEUE_LABEL = { step: 'next step', turn: 'next turn', context: 'context' } as const;

/**
 * What a key typed on an empty input line decides while a call waits for approval: `y` approves, `n` denies,
 * `a` approves it and every later call of its tool in this session (a remembered rule); other keys type.
 */
export function approvalKey(chars: string): { decision: 'approve' | 'deny'; remember?: 'tool' } | null {
  if (chars === 'y') return { decision: 'approve' };
  if (chars === 'n') return { decision: 'deny' };
  if (chars === 'a') return { decision: 'approve', remember: 'tool' };
  return null;
}

export function ChatApp({ controller }: { readonly controller: ChatController }): ReactElement {
  const { exit } = useApp();
  const model = controller.model;
  const [, setVersion] = useState(0);
  const [input, setInputState] = useState<InputState>(EMPTY_INPUT);
  // Keys of one chunk are handled before React re-renders: they edit the ref, the state only redraws.
  const current = useRef<InputState>(EMPTY_INPUT);
  const setInput = (next: InputState | ((state: InputState) => InputState)) => {
    current.current = typeof next === 'function' ? next(current.current) : next;
    setInputState(current.current);
  };
  const escape = useRef<NodeJS.Timeout | null>(null);
  const pasting = useRef(false);

  // Bracketed paste: the terminal marks a paste, so its line breaks are not taken for Enter.
  useEffect(() => {
    process.stdout.write('\x1b[?2004h');
    return () => void process.stdout.write('\x1b[?2004l');
  }, []);

  useEffect(() => {
    const unsubscribe = controller.subscribe(() => setVersion((v) => v + 1));
    controller.start();
    return () => {
      unsubscribe();
    };
  }, [controller]);

  const submit = (key: 'enter' | 'tab') => {
    const line = current.current.text;
    if (line.trim() === '') return;
    setInput(EMPTY_INPUT);
    const slash = parseSlash(line);
    if (slash !== null) void controller.command(slash);
    else void controller.send(fateOf(key, model.openTurn !== null), messageText(line));
  };

  useInput((chars, key) => {
    if (escape.current !== null) {
      // A key right after Esc: an Alt chord, not an interrupt. Alt+Enter adds a line, like Ctrl-J.
      clearTimeout(escape.current);
      escape.current = null;
      if (key.return) {
        setInput((s) => editInput(s, { kind: 'insert', text: '\n' }));
        return;
      }
    }
    if (key.escape) {
      escape.current = setTimeout(() => {
        escape.current = null;
        void controller.interrupt();
      }, ESC_DELAY_MS);
      return;
    }
    if (key.ctrl && chars === 'd') {
      exit();
      return;
    }
    if (key.ctrl && chars === 'c') {
      if (model.openTurn !== null) void controller.interrupt();
      else model.note('Ctrl-D detaches (the session keeps everything); Esc interrupts a running turn');
      setVersion((v) => v + 1);
      return;
    }
    // Alt-Enter (Esc + Enter in one chunk) adds a line; plain Enter sends.
    if (key.return && key.meta) return setInput((s) => editInput(s, { kind: 'insert', text: '\n' }));
    if (key.return) return submit('enter');
    if (key.tab) return submit('tab');
    if (key.backspace || key.delete) return setInput((s) => editInput(s, { kind: 'backspace' }));
    if (key.leftArrow) return setInput((s) => editInput(s, { kind: 'left' }));
    if (key.rightArrow) return setInput((s) => editInput(s, { kind: 'right' }));
    if (key.ctrl && chars === 'a') return setInput((s) => editInput(s, { kind: 'home' }));
    if (key.ctrl && chars === 'e') return setInput((s) => editInput(s, { kind: 'end' }));
    const approval = model.approvals[0];
    const decision = approval !== undefined && current.current.text === '' ? approvalKey(chars) : null;
    if (approval !== undefined && decision !== null) {
      void controller.decide(approval.callId, decision.decision, decision.remember);
      return;
    }
    if (chars === PASTE_START || chars === PASTE_END) {
      pasting.current = chars === PASTE_START;
      return;
    }
    if (chars === '' || (key.ctrl && chars !== '\n') || key.meta) return;
    // A paste (the terminal brackets it) keeps its line breaks; Ctrl-J arrives as "\n".
    if (pasting.current) return setInput((s) => editInput(s, { kind: 'insert', text: chars.replace(/\r\n?/g, '\n') }));
    // Keys typed faster than they are read arrive as one chunk: each Enter or Tab in it sends what precedes it.
    for (const piece of chars.split(/(\r|\t)/)) {
      if (piece === '\r') submit('enter');
      else if (piece === '\t') submit('tab');
      else if (piece !== '') setInput((s) => editInput(s, { kind: 'insert', text: piece }));
    }
  });

  // Declared after useInput, so it runs after useInput has put the terminal in raw mode: nothing invites
  // typing before keys reach the app (typed earlier, the terminal would echo them and turn Enter into "\n").
  const [ready, setReady] = useState(false);
  useEffect(() => setReady(true), []);
  if (!ready) return h(Text, null, '');

  const running = model.openTurn !== null;
  const waiting = model.waiting;
  const approval = model.approvals[0];
  return h(
    Box,
    { flexDirection: 'column' },
    h(Static<ChatLine>, {
      items: [...model.linesFrom(0)],
      children: lineText,
    }),
    model.live !== '' ? h(Text, null, model.live) : null,
    // Lines that came while the answer streams stay below it (they are printed after it once it is logged).
    ...model.trailing.map((line) => lineText(line)),
    ...waiting.map((w) =>
      h(Text, { key: w.messageId, color: 'magenta' }, `⋯ waiting for the ${QUEUE_LABEL[w.queue]}: ${w.text}`),
    ),
    ...model.sending.map((s) => h(Text, { key: s.messageId, dimColor: true }, `⋯ sending the ${s.fate}: ${s.text}`)),
    approval !== undefined
      ? h(
          Text,
          { color: 'yellow' },
          `⏸ ${approval.name} ${approval.args} needs approval [${approval.shortId}] (${approval.reason}): ` +
            `y approve · n deny · a always approve ${approval.name} (this session)`,
        )
      : null,
    h(InputLine, { input }),
    h(
      Text,
      { dimColor: true },
      `${controller.sessionId} · ${running ? `turn ${model.openTurn} ${model.activity || 'running…'}` : 'idle'} · ` +
        (running ? 'Enter steer · Tab after this turn · Esc interrupt' : 'Enter send') +
        ' · Ctrl-J new line · Ctrl-D detach · /help',
    ),
  );
}

function lineText(line: ChatLine): ReactElement {
  const color = COLOR[line.kind];
  return h(Text, { key: line.id, ...(color !== undefined ? { color } : {}) }, line.text);
}

function InputLine({ input }: { readonly input: InputState }): ReactElement {
  const before = input.text.slice(0, input.cursor);
  const at = input.text.slice(input.cursor, input.cursor + 1);
  const after = input.text.slice(input.cursor + 1);
  // The cursor is drawn as an inverse cell; on a line break it sits at the end of the line.
  const cursorChar = at === '' || at === '\n' ? ' ' : at;
  return h(
    Box,
    null,
    h(Text, { color: 'green' }, '› '),
    h(Text, null, before, h(Text, { inverse: true }, cursorChar), at === '\n' ? `\n${after}` : after),
  );
}
