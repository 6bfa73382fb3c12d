// The answer a step is streaming, drawn where it will stand once logged: as the last assistant message of the
// conversation, marked as streaming, with its token counts and cost so far. The logged answer replaces it.
import { describeLiveUsage, type LiveStep } from './live-resume.js';

export function LiveAnswer(props: { step: LiveStep }) {
  const s = props.step;
  const usage = describeLiveUsage(s);
  return (
    <div
      class="msg assistant live"
      role="region"
      aria-label={`Streaming answer of turn ${s.turn} step ${s.step}`}
      aria-busy="true"
      data-testid="live-answer"
    >
      <div class="who">
        <span class="badge origin">assistant</span>
        <span class="badge state state-running">streaming…</span>
        {usage !== null && (
          <span class="muted" data-testid="live-usage">
            {usage}
          </span>
        )}
      </div>
      <div class="text" data-testid="live-text">
        {s.text}
      </div>
    </div>
  );
}
