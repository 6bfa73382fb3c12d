// The live-stream plugin for a scenario harness, whose store (and so its side channel) exists only once
// the harness started: the plugin joins the worker's list up front and publishes once bound.
import type { Plugin } from '../../src/plugins/plugin.js';
import type { DeltaChannel } from '../../src/streaming/delta-channel.js';
import { liveStreamPlugin } from '../../src/streaming/live-stream-plugin.js';
import { openDeltaChannel } from '../../src/streaming/open-delta-channel.js';

export interface LateLiveStream {
  readonly plugin: Plugin;
  /** Opens the side channel of the store at `storePath` (as `dh run` does) and publishes to it from now on. */
  bind(storePath: string): DeltaChannel;
  close(): Promise<void>;
}

export function lateLiveStream(): LateLiveStream {
  let live: Plugin | undefined;
  let channel: DeltaChannel | undefined;
  return {
    plugin: {
      name: 'live-stream',
      onRequest: (request, context) => live?.onRequest?.(request, context),
      onStreamDelta: (delta, context) => live?.onStreamDelta?.(delta, context),
      onToolProgress: (report, context) => live?.onToolProgress?.(report, context),
      onLimiterWait: (report, context) => live?.onLimiterWait?.(report, context),
    },
    bind(storePath) {
      channel = openDeltaChannel(storePath);
      live = liveStreamPlugin(channel, { warn: (message) => console.warn(message) });
      return channel;
    },
    close: async () => {
      live = undefined;
      await channel?.close();
    },
  };
}
