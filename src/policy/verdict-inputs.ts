// The digest a verdict records of what it judged: the tool's name, the model's raw argument string and
// the path facts. An audit recomputes it from the log to tie each verdict to the call it claims to judge.
import { canonicalJson, sha256Digest } from '../core/canonical-json.js';
import type { PathFacts } from './policy-paths.js';

export function verdictInputsDigest(name: string, rawArguments: string, paths: PathFacts): string {
  return sha256Digest(canonicalJson({ name, arguments: rawArguments, paths }));
}
