// What `dh chat` does: opens the stack, checks the session, runs the Ink app until Ctrl-D, then says how
// to come back. Closing the terminal loses nothing: every message was accepted by the session first.
import { render } from 'ink';
import { createElement } from 'react';
import { openDeltaChannel } from '../../streaming/open-delta-channel.js';
import { ChatApp } from '../chat/chat-app.js';
import { ChatController } from '../chat/chat-controller.js';
import { openCliContext } from '../cli-context.js';
import { cliAction, sessionArg } from '../cli-action.js';
import { ExitCode, usageError } from '../exit-codes.js';
import { newSessionId } from './run-actions.js';

export const chatCommand = cliAction(async (session: string | undefined) => {
  if (process.stdin.isTTY !== true || process.stdout.isTTY !== true) {
    throw usageError('dh chat needs a terminal; from a script use dh run, dh steer, dh inject or dh attach');
  }
  const sessionId = session !== undefined ? sessionArg(session) : newSessionId();
  const ctx = await openCliContext();
  const channel = openDeltaChannel(ctx.config.store);
  const controller = new ChatController(ctx, channel, sessionId);
  try {
    if (session === undefined) controller.model.note(`new session ${sessionId}: type a message and press Enter`);
    const app = render(createElement(ChatApp, { controller }), { exitOnCtrlC: false });
    await app.waitUntilExit();
    process.stdout.write(`detached; the session keeps everything: dh chat ${sessionId}\n`);
    return ExitCode.Ok;
  } finally {
    await controller.stop();
    await channel.close();
    await ctx.close();
  }
});
