// Preloaded once per workflow thread, before any workflow runs (the bundle's `preloadModules`), so zod's
// module code and prototypes are shared by every workflow instead of instantiated for each new one. The SDK
// then freezes what was preloaded, so zod's lazily filled state is filled here, before the freeze.
import { z } from 'zod';

// zod compiles an object schema's parser with `new Function` on first parse; that pays off for a hot
// schema, not for the few payloads a workflow parses, and each workflow has its own schema instances.
z.config({ jitless: true });
// Constructing an object schema caches (in a frozen-to-be object) whether eval is allowed: do it now.
z.strictObject({ warm: z.string() }).safeParse({ warm: 0 });
