// A compile-time comparison of a hand-written API type with the zod schema that checks it on the server, so
// neither can gain, lose or change a field without the typecheck saying so.
import type { z } from 'zod';

/** T as a zod schema's output infers it: nothing readonly, an optional field's type widened by undefined. */
export type Loose<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends readonly (infer U)[]
    ? Loose<U>[]
    : T extends object
      ? {
          // An index signature (a record) is no optional field, though it takes an empty object too.
          -readonly [K in keyof T]: string extends K
            ? Loose<T[K]>
            : Partial<Pick<T, K>> extends Pick<T, K>
              ? Loose<T[K]> | undefined
              : Loose<T[K]>;
        }
      : T;

/** True when every value of T fits the schema's output type and every value of that type fits T. */
export type SameShape<T, S extends z.ZodType> = [Loose<T>] extends [z.output<S>]
  ? [z.output<S>] extends [Loose<T>]
    ? true
    : false
  : false;
